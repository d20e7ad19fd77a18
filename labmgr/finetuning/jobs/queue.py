"""Sending jobs queued locally at the daily limit, the first step of ``update``: each claimed
with a lease first, one whose earlier claim lapsed looked up by request id before it is resent."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import openai
from pydantic import BaseModel

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
from labmgr.finetuning.jobs.submit import QUEUE_PHASE, SENT_PHASE, create_once, find_by_request
from labmgr.finetuning.registry.records import job_record
from labmgr.routing import candidate_credentials

CLAIM_LEASE = timedelta(minutes=15)
"""How long a process holds a queued job it is submitting before another may take it."""
PROBE_AFTER = timedelta(minutes=5)
"""How old the last refusal must be before ``update`` tries one waiting job early."""


class SubmittedJob(BaseModel):
    """A job queued locally that `update` sent to the API (``queued-…`` id → the API's)."""

    queued_id: str
    job_id: str
    suffix: str | None


class QueuedJobState(BaseModel):
    """A job still queued locally after `update`, and the earliest time it may go."""

    job_id: str
    suffix: str | None
    not_before: datetime | None


class UncheckedJob(BaseModel):
    """A job `update` could not refresh (or send), and why."""

    job_id: str
    suffix: str | None
    reason: str


@dataclass
class QueueOutcome:
    """What one pass over the local queue did."""

    submitted: list[SubmittedJob] = field(default_factory=list)
    queued: list[QueuedJobState] = field(default_factory=list)
    """Jobs still queued, with the time they may go."""
    unchecked: list[UncheckedJob] = field(default_factory=list)
    """Jobs refused by the API (recorded as failed) or not sent this time (still queued)."""
    requests: int = 0


def submit_queued(
    db: Database,
    pool: ClientPool,
    credentials: Sequence[Credential],
    *,
    now: datetime | None = None,
) -> QueueOutcome:
    """Send every queued job whose time has come, then probe the limit (see the module)."""
    sending = _QueuePass(db, pool, credentials, now or datetime.now(UTC))
    sending.send_due()
    now, outcome = sending.now, sending.outcome
    waiting = queued_jobs(db)
    last_refusal = max((job.refreshed_at or job.created_at or now for job in waiting), default=now)
    troubled = {job.job_id for job in outcome.unchecked}
    probe = next((job for job in waiting if job.id not in troubled), None)
    if probe is not None and not sending.blocked and now - last_refusal >= PROBE_AFTER:
        _make_due(db, [probe], now)
        sent = len(outcome.submitted)
        sending.send_due()
        if len(outcome.submitted) > sent:  # accepted: the limit has room again
            _make_due(db, queued_jobs(db), now)
            sending.send_due()
    outcome.queued = [
        QueuedJobState(job_id=job.id, suffix=job.suffix, not_before=job.not_before)
        for job in queued_jobs(db)
    ]
    return outcome


def _make_due(db: Database, jobs: Sequence[FinetuneJob], now: datetime) -> None:
    for job in jobs:
        upsert_job(db, FinetuneJob(id=job.id, status=QUEUED_LOCALLY, not_before=now))


@dataclass
class _QueuePass:
    db: Database
    pool: ClientPool
    credentials: Sequence[Credential]
    now: datetime
    owner: str = field(default_factory=lambda: f"update-{uuid.uuid4().hex[:12]}")
    blocked: dict[str, datetime] = field(default_factory=dict)
    """Key env -> when its organization frees a slot."""
    outcome: QueueOutcome = field(default_factory=QueueOutcome)

    def send_due(self) -> None:
        while claim := claim_queued_job(self.db, owner=self.owner, now=self.now, lease=CLAIM_LEASE):
            self.submit(claim)

    def release(self, job: FinetuneJob, not_before: datetime, **fields: str) -> None:
        release_queued_job(self.db, job.id, owner=self.owner, not_before=not_before, **fields)

    def unchecked(self, job: FinetuneJob, reason: str, what: str = "queued job not sent") -> None:
        entry = UncheckedJob(job_id=job.id, suffix=job.suffix, reason=f"{what}: {reason}")
        self.outcome.unchecked.append(entry)

    def submit(self, claim: QueueClaim) -> None:
        db, job, now, outcome = self.db, claim.job, self.now, self.outcome
        candidates = candidate_credentials(job, self.credentials)
        if not candidates or not job.create_request:
            reason = "no configured key belongs to its project" if job.create_request else ""
            self.release(job, now + MIN_WAIT * 12)
            self.unchecked(job, reason or "its create request was not recorded")
            return
        credential = candidates[0]
        if credential.key_env in self.blocked:
            self.release(job, self.blocked[credential.key_env])
            return
        client = self.pool.client(credential)
        body = dict(job.create_request)
        remote = None
        # Its last holder may have sent it, then crashed; or a send went unanswered.
        if claim.previous_owner is not None or job.phase == SENT_PHASE:
            outcome.requests += 1
            try:
                remote = find_by_request(client, body["metadata"][REQUEST])
            except openai.APIError as exc:
                self.release(job, now + MIN_WAIT, phase=SENT_PHASE)
                self.unchecked(job, f"could not check whether the API holds it ({_reason(exc)})")
                return
        if remote is None:
            outcome.requests += 1
            try:
                remote = create_once(db, client, credential, body, [])
            except DailyJobLimit as limit:
                self.blocked[credential.key_env] = slot_time(limit, now)
                refusal = FinetuneJob(id=job.id, status=QUEUED_LOCALLY, refreshed_at=now)
                upsert_job(db, refusal)  # when the API last refused: see PROBE_AFTER
                self.release(job, self.blocked[credential.key_env], phase=QUEUE_PHASE)
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
                self.unchecked(job, refusal.message, "refused")
                return
            except (FineTuningApiError, openai.APIError, OSError) as exc:
                self.release(job, now + MIN_WAIT, phase=SENT_PHASE)  # it may have gone through
                self.unchecked(job, _reason(exc))
                return
        record = job_record(remote, refreshed_at=datetime.now(UTC), credential=credential)
        if promote_queued_job(db, job.id, record, owner=self.owner):
            outcome.submitted.append(
                SubmittedJob(queued_id=job.id, job_id=record.id, suffix=job.suffix)
            )


def _reason(exc: Exception) -> str:
    if isinstance(exc, FineTuningApiError):
        return exc.message
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {api_message(exc)}"
    return f"could not reach the API ({type(exc).__name__})"
