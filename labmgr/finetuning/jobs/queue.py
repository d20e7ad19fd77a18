"""Sending jobs queued locally at the daily limit: the first step of ``update``.

Each job is claimed in the database first (a lease), so two ``update`` processes never send
the same job. A job whose earlier claim lapsed (its holder crashed, maybe after sending) is
looked up on the API by its request id before it is sent again. At the daily limit the job
waits for the next slot, and so do the other due jobs of the same key. When the last
refusal is older than `PROBE_AFTER`, one waiting job is tried early: if the limit was
raised (or the slot estimate was wrong) it goes, and so do the rest.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import openai

from jobs_db import (
    QUEUED_LOCALLY,
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
from labmgr.errors import DailyJobLimit, FineTuningApiError, JobRefused, api_message
from labmgr.finetuning.jobs.daily_limit import MIN_WAIT, slot_time
from labmgr.finetuning.jobs.request import REQUEST
from labmgr.finetuning.jobs.submit import QUEUE_PHASE, create_once, find_by_request
from labmgr.finetuning.registry.records import job_record
from labmgr.routing import candidate_credentials

CLAIM_LEASE = timedelta(minutes=15)
"""How long a process holds a queued job it is submitting before another may take it."""
PROBE_AFTER = timedelta(minutes=5)
"""How old the last refusal must be before ``update`` tries one waiting job early."""


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
    """Send every queued job whose time has come, then probe the limit (see the module)."""
    now = now or datetime.now(UTC)
    owner = f"update-{uuid.uuid4().hex[:12]}"
    outcome = QueueOutcome()
    blocked: dict[str, datetime] = {}  # key env -> when its organization frees a slot
    _send_due(db, pool, credentials, owner, now, blocked, outcome)
    waiting = queued_jobs(db)
    last_refusal = max((job.refreshed_at or job.created_at or now for job in waiting), default=now)
    troubled = {job.id for job, _ in outcome.problems}
    probe = next((job for job in waiting if job.id not in troubled), None)
    if probe is not None and not blocked and now - last_refusal >= PROBE_AFTER:
        _make_due(db, [probe], now)
        sent = len(outcome.submitted)
        _send_due(db, pool, credentials, owner, now, blocked, outcome)
        if len(outcome.submitted) > sent:  # accepted: the limit has room again
            _make_due(db, queued_jobs(db), now)
            _send_due(db, pool, credentials, owner, now, blocked, outcome)
    outcome.waiting = queued_jobs(db)
    return outcome


def _make_due(db: Database, jobs: Sequence[FinetuneJob], now: datetime) -> None:
    for job in jobs:
        upsert_job(db, FinetuneJob(id=job.id, status=QUEUED_LOCALLY, not_before=now))


def _send_due(
    db: Database,
    pool: ClientPool,
    credentials: Sequence[Credential],
    owner: str,
    now: datetime,
    blocked: dict[str, datetime],
    outcome: QueueOutcome,
) -> None:
    while True:
        claim = claim_queued_job(db, owner=owner, now=now, lease=CLAIM_LEASE)
        if claim is None:
            return
        _submit_one(db, pool, credentials, claim, owner, now, blocked, outcome)


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
            refusal = FinetuneJob(id=job.id, status=QUEUED_LOCALLY, refreshed_at=now)
            upsert_job(db, refusal)  # when the API last refused: see PROBE_AFTER
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
        except (FineTuningApiError, openai.APIError, OSError) as exc:
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


def _reason(exc: Exception) -> str:
    if isinstance(exc, FineTuningApiError):
        return exc.message
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {api_message(exc)}"
    return f"could not reach the API ({type(exc).__name__})"
