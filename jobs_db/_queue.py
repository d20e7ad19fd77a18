"""The local queue of jobs waiting for a daily slot: a claim is one conditional UPDATE with a
lease (``previous_owner`` when it lapsed); the holder promotes or releases the row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, or_, select, update

from jobs_db._database import Target, refuse_naive_times, set_columns, using
from jobs_db._queries import JOBS, TAGS, chronological, jobs_where
from jobs_db._tables import QUEUED_LOCALLY, FinetuneJob
from jobs_db._writes import upsert_job

# Columns of a queued row that describe the request and carry over to the API's job.
_CARRIED = (
    "organization_id", "project_id", "key_env", "endpoint", "base_model", "suffix",
    "training_file_id", "validation_file_id", "method", "hyperparameters_requested",
    "seed_requested", "api_metadata", "create_request",
)  # fmt: skip
_QUEUE_ONLY = dict.fromkeys(("not_before", "claimed_by", "claimed_until", "phase"))


@dataclass(frozen=True)
class QueueClaim:
    """A queued job this process now holds, until ``job.claimed_until``."""

    job: FinetuneJob
    previous_owner: str | None
    """Who held it before when that claim lapsed (it may have reached the API), else None."""


def queued_jobs(target: Target) -> list[FinetuneJob]:
    """Every job queued locally, oldest first."""
    return jobs_where(target, JOBS.c.status == QUEUED_LOCALLY)


def _free(now: datetime) -> Any:
    return or_(JOBS.c.claimed_until.is_(None), JOBS.c.claimed_until < now)


def claim_queued_job(
    target: Target, *, owner: str, now: datetime, lease: timedelta
) -> QueueClaim | None:
    """Claim the oldest queued job that may go at ``now`` and nobody holds, for ``lease``
    (``submit_attempts`` counts the claims); None when no job is due."""
    refuse_naive_times("claim", {"now": now})
    due = or_(JOBS.c.not_before.is_(None), JOBS.c.not_before <= now)
    with using(target, write=True) as session:
        rows = session.execute(
            select(JOBS.c.id, JOBS.c.created_at, JOBS.c.claimed_by).where(
                JOBS.c.status == QUEUED_LOCALLY, due, _free(now)
            )
        ).all()
        for job_id, _, previous in sorted(rows, key=lambda row: chronological(row[1], row[0])):
            taken = session.execute(
                update(JOBS)
                .where(JOBS.c.id == job_id, JOBS.c.status == QUEUED_LOCALLY, _free(now))
                .values(
                    claimed_by=owner,
                    claimed_until=now + lease,
                    submit_attempts=func.coalesce(JOBS.c.submit_attempts, 0) + 1,
                )
            ).rowcount  # type: ignore[attr-defined]
            if taken:
                job = session.get(FinetuneJob, job_id, populate_existing=True)
                if job is not None:
                    return QueueClaim(job=job, previous_owner=previous)
    return None


def release_queued_job(
    target: Target, job_id: str, *, owner: str, not_before: datetime, phase: str | None = None
) -> bool:
    """Give the claim back and let the job wait until ``not_before``; False if not held."""
    refuse_naive_times("release", {"not_before": not_before})
    values: dict[str, Any] = {"claimed_by": None, "claimed_until": None, "not_before": not_before}
    if phase is not None:
        values["phase"] = phase
    with using(target, write=True) as session:
        changed = session.execute(
            update(JOBS).where(JOBS.c.id == job_id, JOBS.c.claimed_by == owner).values(values)
        ).rowcount  # type: ignore[attr-defined]
    return bool(changed)


def promote_queued_job(target: Target, queued_id: str, job: FinetuneJob, *, owner: str) -> bool:
    """Replace the queued row ``queued_id`` (claimed by ``owner``) with the API's ``job``, in
    one transaction: its request fields and tags carry over, fields set on ``job`` win. False,
    and nothing written, when ``owner`` does not hold it."""
    with using(target, write=True) as session:
        row = (
            session.execute(
                select(JOBS).where(
                    JOBS.c.id == queued_id,
                    JOBS.c.status == QUEUED_LOCALLY,
                    JOBS.c.claimed_by == owner,
                )
            )
            .mappings()
            .first()
        )
        if row is None:
            return False
        listed = session.execute(select(TAGS.c.key, TAGS.c.value).where(TAGS.c.job_id == queued_id))
        tags = {str(key): str(value) for key, value in listed}
        session.execute(delete(TAGS).where(TAGS.c.job_id == queued_id))
        session.execute(delete(JOBS).where(JOBS.c.id == queued_id))
        given = set_columns(job)
        carried = {name: row[name] for name in _CARRIED if row[name] is not None}
        record = FinetuneJob(**{**carried, **_QUEUE_ONLY, **given})
        upsert_job(session, record, tags=tags)
    return True


def cancel_queued_job(target: Target, job_id: str, *, now: datetime) -> bool:
    """Cancel a queued job nobody is submitting right now; False if it cannot be."""
    refuse_naive_times("cancel", {"now": now})
    with using(target, write=True) as session:
        changed = session.execute(
            update(JOBS)
            .where(JOBS.c.id == job_id, JOBS.c.status == QUEUED_LOCALLY, _free(now))
            .values({**_QUEUE_ONLY, "status": "cancelled", "finished_at": now})
        ).rowcount  # type: ignore[attr-defined]
    return bool(changed)
