"""`update`: send queued jobs whose slot came, then refresh every non-final job
concurrently, each with a key of its project, and store the curves of jobs that finished."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.fine_tuning import FineTuningJob, FineTuningJobEvent
from openai.types.fine_tuning.jobs import FineTuningJobCheckpoint

from jobs_db import (
    Database,
    DatabaseError,
    FinetuneJob,
    TrainingCurve,
    job_events,
    job_models,
    jobs_missing_curves,
    non_final_jobs,
    queued_jobs,
    replace_checkpoints,
    store_curve,
    upsert_job,
)
from labmgr.accounts import Accounts, ClientPool, Credential
from labmgr.errors import LabmgrError
from labmgr.finetuning.curves import ResultsFileError, parse_results_file
from labmgr.finetuning.errors import api_message
from labmgr.finetuning.jobs import QueueOutcome, submit_queued
from labmgr.finetuning.registry import (
    checkpoint_models,
    event_records,
    job_phase,
    job_record,
    lab_database,
)
from labmgr.finetuning.routing import candidate_credentials, resolved_credentials
from labmgr.finetuning.sync.summary import (
    JobState,
    QueuedJobState,
    SubmittedJob,
    UncheckedJob,
    UpdateSummary,
)
from labmgr.settings import Settings, load_settings

__all__ = ["DEFAULT_CONCURRENCY", "aupdate", "update"]

DEFAULT_CONCURRENCY = 16
"""Jobs refreshed at once."""


@dataclass
class _Fetched:
    job: FineTuningJob
    credential: Credential
    refreshed_at: datetime
    events: list[FineTuningJobEvent] = field(default_factory=list)
    checkpoints: list[FineTuningJobCheckpoint] = field(default_factory=list)
    curve: TrainingCurve | None = None
    curve_problem: str | None = None


class _Unchecked(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def update(
    *, settings: Settings | None = None, concurrency: int = DEFAULT_CONCURRENCY
) -> UpdateSummary:
    """Send queued jobs whose time came, then refresh every job whose status may change.

    First, jobs queued locally at the daily limit whose ``not_before`` has passed are sent
    (each claimed in the database, so two updates never send one twice); a job refused
    again waits for the next slot. Then each non-final job is asked for with the key that
    created it, else a key of its project (see `candidate_credentials`); at most
    `concurrency` jobs are in flight. Records status, error, ETA, phase, trained tokens,
    actual hyperparameters and seed, events, the final model and every checkpoint, and
    the job's training curves (its results file, read once). Final jobs cost no request,
    except a succeeded job whose curves are not stored yet (one download). Jobs that
    cannot be checked are listed with the reason. Use `aupdate` in a running event loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aupdate(settings=settings, concurrency=concurrency))
    raise LabmgrError(
        "update() cannot run inside a running event loop (a notebook cell, an async app).",
        hint="Use `await aupdate()` there instead.",
    )


async def aupdate(
    *, settings: Settings | None = None, concurrency: int = DEFAULT_CONCURRENCY
) -> UpdateSummary:
    """The asynchronous twin of `update`."""
    settings = settings or load_settings()
    with lab_database(settings) as db:
        waiting = queued_jobs(db)
        missing = jobs_missing_curves(db)
        if not waiting and not missing and not non_final_jobs(db):
            return UpdateSummary()
        accounts = Accounts(settings)
        try:
            credentials, failures = resolved_credentials(accounts)
        finally:
            accounts.close()
        pool = ClientPool(settings)
        try:
            queue = QueueOutcome()
            if waiting:
                queue = await asyncio.to_thread(submit_queued, db, pool, credentials)
            summary = await _refresh_all(
                db, pool, non_final_jobs(db), missing, credentials, failures, concurrency
            )
        finally:
            await pool.aclose()
    _add_queue(summary, queue)
    return summary


def _add_queue(summary: UpdateSummary, queue: QueueOutcome) -> None:
    summary.requests += queue.requests
    summary.submitted = [
        SubmittedJob(queued_id=queued_id, job_id=job.id, suffix=job.suffix)
        for queued_id, job in queue.submitted
    ]
    summary.queued = [
        QueuedJobState(job_id=job.id, suffix=job.suffix, not_before=job.not_before)
        for job in queue.waiting
    ]
    summary.unchecked += [
        UncheckedJob(job_id=job.id, suffix=job.suffix, reason=f"queued job not sent: {reason}")
        for job, reason in queue.problems
    ]
    summary.unchecked += [
        UncheckedJob(job_id=job.id, suffix=job.suffix, reason=f"refused: {job.error_message or ''}")
        for job in queue.refused
    ]


async def _refresh_all(
    db: Database,
    pool: ClientPool,
    jobs: Sequence[FinetuneJob],
    missing: Sequence[FinetuneJob],
    credentials: Sequence[Credential],
    failures: dict[str, str],
    concurrency: int,
) -> UpdateSummary:
    limit = asyncio.Semaphore(max(1, concurrency))
    summary = UpdateSummary()
    counter = [0]

    async def curves_only(job: FinetuneJob) -> str | None:
        async with limit:
            try:
                curve, problem = await _download_curves(job, pool, credentials, failures, counter)
            except _Unchecked as unchecked:
                return unchecked.reason
        if curve is not None:
            try:
                store_curve(db, curve)
            except DatabaseError as exc:
                return f"database: {exc}"
            summary.curves += 1
        return problem

    async def one(job: FinetuneJob) -> JobState | UncheckedJob:
        async with limit:
            try:
                fetched = await _fetch(job, pool, credentials, failures, counter)
            except _Unchecked as unchecked:
                return UncheckedJob(job_id=job.id, suffix=job.suffix, reason=unchecked.reason)
        try:
            return _record(db, job, fetched)
        except DatabaseError as exc:
            return UncheckedJob(job_id=job.id, suffix=job.suffix, reason=f"database: {exc}")

    results, curve_problems = await asyncio.gather(
        asyncio.gather(*(one(job) for job in jobs)),
        asyncio.gather(*(curves_only(job) for job in missing)),
    )
    for result in results:
        if isinstance(result, JobState):
            summary.checked.append(result)
            summary.curves += result.curves_stored
            if result.curves_problem:
                summary.unchecked.append(
                    UncheckedJob(
                        job_id=result.job_id,
                        suffix=result.suffix,
                        reason=f"training curves: {result.curves_problem}",
                    )
                )
        else:
            summary.unchecked.append(result)
    for job, problem in zip(missing, curve_problems, strict=True):
        if problem:
            summary.unchecked.append(
                UncheckedJob(job_id=job.id, suffix=job.suffix, reason=f"training curves: {problem}")
            )
    summary.requests = counter[0]
    return summary


def _no_key_reason(job: FinetuneJob, failures: dict[str, str]) -> str:
    owner = f"project {job.project_id}" if job.project_id else f"organization {job.organization_id}"
    reason = f"no configured key belongs to {owner}"
    if job.key_env:
        reason += f" (it was created with {job.key_env})"
    if failures:
        reason += "; " + "; ".join(
            f"{failures[key_env].rstrip('.')}" for key_env in sorted(failures)
        )
    return reason


async def _retrieve(
    job: FinetuneJob,
    pool: ClientPool,
    credentials: Sequence[Credential],
    failures: dict[str, str],
    counter: list[int],
) -> tuple[AsyncOpenAI, Credential, FineTuningJob, datetime]:
    candidates = candidate_credentials(job, credentials)
    if not candidates:
        raise _Unchecked(_no_key_reason(job, failures))
    tried = []
    for credential in candidates:
        client = pool.async_client(credential)
        started = datetime.now(UTC)
        counter[0] += 1
        try:
            return client, credential, await client.fine_tuning.jobs.retrieve(job.id), started
        except openai.NotFoundError:
            tried.append(credential.key_env)
        except openai.APIStatusError as exc:
            raise _Unchecked(
                f"{credential.key_env}: HTTP {exc.status_code}: {api_message(exc)}"
            ) from None
        except openai.APIConnectionError:
            raise _Unchecked(f"could not reach {credential.base_url}") from None
    raise _Unchecked(f"not found with {', '.join(tried)} (deleted, or another project's job)")


async def _fetch(
    job: FinetuneJob,
    pool: ClientPool,
    credentials: Sequence[Credential],
    failures: dict[str, str],
    counter: list[int],
) -> _Fetched:
    client, credential, remote, started = await _retrieve(job, pool, credentials, failures, counter)
    fetched = _Fetched(remote, credential, started)
    final = remote.status in ("succeeded", "failed", "cancelled")
    try:
        counter[0] += 1
        page = await client.fine_tuning.jobs.list_events(job.id, limit=100)
        fetched.events = list(page.data)
        while final and page.has_next_page():
            counter[0] += 1
            page = await page.get_next_page()
            fetched.events.extend(page.data)
        if remote.status == "succeeded":
            counter[0] += 1
            checkpoints = await client.fine_tuning.jobs.checkpoints.list(job.id, limit=100)
            fetched.checkpoints = list(checkpoints.data)
            while checkpoints.has_next_page():
                counter[0] += 1
                checkpoints = await checkpoints.get_next_page()
                fetched.checkpoints.extend(checkpoints.data)
            if remote.result_files:
                counter[0] += 1
                fetched.curve, fetched.curve_problem = await _read_curves(
                    client, job.id, remote.result_files[0]
                )
    except openai.APIStatusError as exc:
        raise _Unchecked(f"reading events: HTTP {exc.status_code}: {api_message(exc)}") from None
    except openai.APIConnectionError:
        raise _Unchecked(f"could not reach {credential.base_url}") from None
    return fetched


async def _read_curves(
    client: AsyncOpenAI, job_id: str, file_id: str
) -> tuple[TrainingCurve | None, str | None]:
    """The job's curves from its results file, or the reason they cannot be read."""
    content = await client.files.content(file_id)
    try:
        header, rows = parse_results_file(content.content)
    except ResultsFileError as exc:
        return None, f"results file {file_id}: {exc}"
    curve = TrainingCurve(
        job_id=job_id, file_id=file_id, header=header, rows=rows, downloaded_at=datetime.now(UTC)
    )
    return curve, None


async def _download_curves(
    job: FinetuneJob,
    pool: ClientPool,
    credentials: Sequence[Credential],
    failures: dict[str, str],
    counter: list[int],
) -> tuple[TrainingCurve | None, str | None]:
    """The curves of a finished job whose results file is known but not stored yet."""
    candidates = candidate_credentials(job, credentials)
    if not candidates or job.result_file_id is None:
        raise _Unchecked(_no_key_reason(job, failures))
    for credential in candidates:
        client = pool.async_client(credential)
        counter[0] += 1
        try:
            return await _read_curves(client, job.id, job.result_file_id)
        except openai.NotFoundError:
            continue
        except openai.APIStatusError as exc:
            raise _Unchecked(
                f"results file {job.result_file_id}: HTTP {exc.status_code}: {api_message(exc)}"
            ) from None
        except openai.APIConnectionError:
            raise _Unchecked(f"could not reach {credential.base_url}") from None
    return None, f"results file {job.result_file_id} was not found with any key of its project"


def _record(db: Database, before: FinetuneJob, fetched: _Fetched) -> JobState:
    remote, credential = fetched.job, fetched.credential
    phase = job_phase(remote.status, fetched.events)
    record = job_record(
        remote,
        refreshed_at=fetched.refreshed_at,
        key_env=credential.key_env,
        endpoint=credential.base_url,
        project_id=credential.project,
        phase=phase,
    )
    if not before.suffix:
        suffix = (remote.model_extra or {}).get("user_provided_suffix")
        if isinstance(suffix, str) and suffix:
            record.suffix = suffix
    n_checkpoints = 0
    with db.session() as session:
        if upsert_job(session, record):
            # Events never change once listed: add the new ones only (cheap on each poll).
            stored = {event.id for event in job_events(session, remote.id)}
            for event in event_records(remote.id, fetched.events):
                if event.id not in stored:
                    session.add(event)
            if remote.status == "succeeded":
                hyper: dict[str, Any] = record.hyperparameters_actual or {}
                models = checkpoint_models(fetched.checkpoints, hyper.get("n_epochs"))
                replace_checkpoints(session, remote.id, models)
                if fetched.curve is not None:
                    store_curve(session, fetched.curve)
        n_checkpoints = sum(1 for m in job_models(session, remote.id) if m.kind == "checkpoint")
    error = remote.error.message if remote.status == "failed" and remote.error else None
    return JobState(
        job_id=remote.id,
        suffix=before.suffix or record.suffix,
        key_env=credential.key_env,
        previous_status=before.status,
        status=remote.status,
        phase=phase,
        estimated_finish=record.estimated_finish,
        fine_tuned_model=remote.fine_tuned_model,
        error=error,
        checkpoints=n_checkpoints,
        curves_stored=int(fetched.curve is not None),
        curves_problem=fetched.curve_problem,
    )
