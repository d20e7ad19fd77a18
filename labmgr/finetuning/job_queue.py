"""Recording jobs the daily limit held back, and when each may be sent."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from jobs_db import QUEUED_LOCALLY, Database, FinetuneJob, upsert_job
from labmgr.accounts import Credential
from labmgr.finetuning.errors import DailyJobLimit
from labmgr.finetuning.job_request import JobRequest

__all__ = [
    "CLAIM_LEASE",
    "QUEUE_PHASE",
    "queue_requests",
    "queued_id",
    "slot_time",
]

QUEUE_PHASE = "waiting for a daily job slot"
"""The phase a job queued locally shows in ``jobs list`` and ``jobs show``."""
RETRY_WHEN_UNKNOWN = timedelta(hours=1)
"""How long to wait when the limit message and the lab's jobs do not say when a slot frees."""
MIN_WAIT = timedelta(minutes=5)
"""The shortest wait after a refusal (an estimate already in the past means other projects
hold the slots)."""
CLAIM_LEASE = timedelta(minutes=15)
"""How long a process holds a queued job it is submitting before another may take it."""


def slot_time(limit: DailyJobLimit, now: datetime) -> datetime:
    """When to try again after `limit`: the time a slot frees, at least `MIN_WAIT` away."""
    if limit.frees_at is None:
        return now + RETRY_WHEN_UNKNOWN
    return max(limit.frees_at, now + MIN_WAIT)


def queued_id(request_id: str) -> str:
    """The local id of a queued job, from its request id (stable across retries)."""
    return f"queued-{request_id[:20]}"


def queue_requests(
    db: Database,
    credential: Credential,
    waiting: Sequence[tuple[JobRequest, dict[str, Any]]],
    *,
    not_before: datetime,
    now: datetime,
) -> list[FinetuneJob]:
    """Record each (request, ``jobs.create`` body) as a job queued locally until `not_before`."""
    queued = []
    for request, body in waiting:
        record = FinetuneJob(
            id=queued_id(request.request_id),
            status=QUEUED_LOCALLY,
            phase=QUEUE_PHASE,
            created_at=now,
            not_before=not_before,
            training_file_id=body["training_file"],
            validation_file_id=body.get("validation_file"),
            api_metadata=body["metadata"],
            create_request=body,
            integrations=body.get("integrations"),
            **request.recorded(credential),
        )
        upsert_job(db, record, tags=request.tags)
        queued.append(record)
    return queued
