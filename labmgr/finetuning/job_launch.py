"""Sending ``jobs.create`` once per planned job and recording each; at the daily limit the
rest are queued locally (their files are already uploaded)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import openai
from openai import OpenAI

from jobs_db import Database, FinetuneJob, get_job, upsert_job
from labmgr.accounts import Credential
from labmgr.finetuning.api_errors import api_message
from labmgr.finetuning.daily_limit import daily_limit_error, is_daily_limit
from labmgr.finetuning.errors import DailyJobLimit, FineTuningApiError, JobRefused
from labmgr.finetuning.job_metadata import REQUEST
from labmgr.finetuning.job_queue import queue_requests, slot_time
from labmgr.finetuning.job_request import JobRequest
from labmgr.finetuning.job_snapshot import job_record

__all__ = ["create_once", "find_by_request", "launch"]


def launch(
    db: Database,
    client: OpenAI,
    credential: Credential,
    requests: Sequence[JobRequest],
    files: Mapping[str, str],
) -> list[FinetuneJob]:
    """Create and record each job in order; returns them, queued ones included.

    `files` maps each file's md5 to its uploaded id. When the API answers that the daily
    job limit is reached, this job and every later one are recorded as queued locally,
    to be sent by ``update`` from the time a slot frees.
    """
    done: list[FinetuneJob] = []
    for index, request in enumerate(requests):
        body = _body(request, files)
        try:
            job = create_once(db, client, credential, body, done)
        except DailyJobLimit as limit:
            now = datetime.now(UTC)
            waiting = [(later, _body(later, files)) for later in requests[index:]]
            queued = queue_requests(
                db, credential, waiting, not_before=slot_time(limit, now), now=now
            )
            return _as_stored(db, done + queued)
        record = job_record(
            job,
            refreshed_at=datetime.now(UTC),
            api_metadata=body["metadata"],
            create_request=body,
            **request.recorded(credential),
        )
        upsert_job(db, record, tags=request.tags)
        done.append(record)
    return _as_stored(db, done)


def _as_stored(db: Database, jobs: list[FinetuneJob]) -> list[FinetuneJob]:
    """The jobs as the database holds them now (with their tags)."""
    return [get_job(db, job.id) or job for job in jobs]


def _body(request: JobRequest, files: Mapping[str, str]) -> dict[str, Any]:
    validation = files[request.validation.md5] if request.validation else None
    return request.body(files[request.training.md5], validation)


def find_by_request(client: OpenAI, request_id: str) -> Any | None:
    """The job created with labmgr request id `request_id`, if the API holds one."""
    try:
        found = list(client.fine_tuning.jobs.list(metadata={REQUEST: request_id}, limit=5))
    except openai.APIError:
        return None
    return found[0] if found else None


def create_once(
    db: Database,
    client: OpenAI,
    credential: Credential,
    body: dict[str, Any],
    created: list[FinetuneJob],
) -> Any:
    """One ``jobs.create`` without blind retries: a lost response is looked up by request id.

    Raises `DailyJobLimit` at the daily limit, `JobRefused` when the API refuses the job, and
    `FineTuningApiError` when it failed and the job cannot be found after the failure.
    """
    try:
        return client.with_options(max_retries=0).fine_tuning.jobs.create(**body)
    except openai.APIStatusError as exc:
        if is_daily_limit(exc):
            raise daily_limit_error(exc, client, db, credential, created) from None
        if exc.status_code < 500:
            raise JobRefused(
                f"The API refused the job for suffix {body['suffix']!r}: HTTP "
                f"{exc.status_code}: {api_message(exc)}",
                hint="Fix the request (base model, hyperparameters, file) and run it again.",
            ) from None
        failure = f"HTTP {exc.status_code}"
    except openai.APIConnectionError:
        failure = "the connection failed"
    found = find_by_request(client, body["metadata"][REQUEST])
    if found is not None:
        return found
    done = "".join(f" {job.id}" for job in created)
    raise FineTuningApiError(
        f"Creating the job for suffix {body['suffix']!r} failed ({failure}); the API holds no "
        f"job from this request.{' Created before it:' + done if done else ''}",
        hint="Run the same command again (the uploaded file is reused).",
    )
