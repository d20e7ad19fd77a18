"""Sending jobs queued locally once their time has come: the first step of ``update``.

Each job is claimed in the database first (a lease), so two ``update`` processes never send
the same job. A job whose earlier claim lapsed (its holder crashed, maybe after sending) is
looked up on the API by its request id before it is sent again. At the daily limit the job
waits for the next slot, and so do the other due jobs of the same key: they are not sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import openai

from jobs_db import (
    Database,
    FinetuneJob,
    QueueClaim,
    claim_queued_job,
    promote_queued_job,
    queued_jobs,
    release_queued_job,
    upsert_job,
)
from labmgr.accounts import ClientPool, Credential
from labmgr.finetuning.api_errors import api_message
from labmgr.finetuning.errors import DailyJobLimit, FineTuningApiError, JobRefused
from labmgr.finetuning.job_launch import create_once, find_by_request
from labmgr.finetuning.job_metadata import REQUEST
from labmgr.finetuning.job_queue import CLAIM_LEASE, MIN_WAIT, QUEUE_PHASE, slot_time
from labmgr.finetuning.job_snapshot import job_record
from labmgr.routing import candidate_credentials

__all__ = ["QueueOutcome", "submit_queued"]


@dataclass
class QueueOutcome:
    """What one pass over the local queue did."""

    submitted: list[tuple[str, FinetuneJob]] = field(default_factory=list)
    """(queued id, the API's job as recorded) for each job sent."""
    refused: list[FinetuneJob] = field(default_factory=list)
    """Jobs the API refused outright (recorded as failed, with its message)."""
    waiting: list[FinetuneJob] = field(default_factory=list)
    """Jobs still queued, with the time they may go (``not_before``)."""
    problems: list[tuple[FinetuneJob, str]] = field(default_factory=list)
    """Jobs that could not be sent this time, and why (they stay queued)."""
    requests: int = 0
    """API requests made."""


def submit_queued(
    db: Database,
    pool: ClientPool,
    credentials: Sequence[Credential],
    *,
    now: datetime | None = None,
) -> QueueOutcome:
    """Send every queued job whose time has come; the rest keep waiting."""
    now = now or datetime.now(UTC)
    owner = f"update-{uuid.uuid4().hex[:12]}"
    outcome = QueueOutcome()
    blocked: dict[str, datetime] = {}  # key env -> when its organization frees a slot
    while True:
        claim = claim_queued_job(db, owner=owner, now=now, lease=CLAIM_LEASE)
        if claim is None:
            break
        _submit_one(db, pool, credentials, claim, owner, now, blocked, outcome)
    outcome.waiting = queued_jobs(db)
    return outcome


def _submit_one(
    db: Database,
    pool: ClientPool,
    credentials: Sequence[Credential],
    claim: QueueClaim,
    owner: str,
    now: datetime,
    blocked: dict[str, datetime],
    outcome: QueueOutcome,
) -> None:
    job = claim.job
    candidates = candidate_credentials(job, credentials)
    if not candidates or not job.create_request:
        reason = "no configured key belongs to its project" if job.create_request else ""
        reason = reason or "its create request was not recorded"
        release_queued_job(db, job.id, owner=owner, not_before=now + MIN_WAIT * 12)
        outcome.problems.append((job, reason))
        return
    credential = candidates[0]
    if credential.key_env in blocked:
        release_queued_job(db, job.id, owner=owner, not_before=blocked[credential.key_env])
        return
    client = pool.client(credential)
    body = dict(job.create_request)
    remote = None
    if claim.previous_owner is not None:  # its last holder may have sent it, then crashed
        outcome.requests += 1
        remote = find_by_request(client, body["metadata"][REQUEST])
    if remote is None:
        outcome.requests += 1
        try:
            remote = create_once(db, client, credential, body, [])
        except DailyJobLimit as limit:
            blocked[credential.key_env] = slot_time(limit, now)
            release_queued_job(
                db, job.id, owner=owner, not_before=blocked[credential.key_env], phase=QUEUE_PHASE
            )
            return
        except JobRefused as refusal:
            failed = FinetuneJob(
                id=job.id,
                status="failed",
                phase=None,
                error_message=refusal.message,
                finished_at=now,
                claimed_by=None,
                claimed_until=None,
            )
            upsert_job(db, failed)
            outcome.refused.append(failed)
            return
        except FineTuningApiError as failure:
            release_queued_job(db, job.id, owner=owner, not_before=now + MIN_WAIT)
            outcome.problems.append((job, failure.message))
            return
        except (openai.APIError, OSError) as exc:
            release_queued_job(db, job.id, owner=owner, not_before=now + MIN_WAIT)
            outcome.problems.append((job, _reason(exc)))
            return
    record = job_record(
        remote,
        refreshed_at=datetime.now(UTC),
        key_env=credential.key_env,
        endpoint=credential.base_url,
        project_id=credential.project,
    )
    if promote_queued_job(db, job.id, record, owner=owner):
        outcome.submitted.append((job.id, record))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {api_message(exc)}"
    return f"could not reach the API ({type(exc).__name__})"
