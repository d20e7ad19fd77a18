"""`update`: send queued jobs whose slot came, then refresh every non-final job concurrently,
each with a key of its project; and the `UpdateSummary` it returns."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import aclosing, closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.fine_tuning import FineTuningJob, FineTuningJobEvent
from openai.types.fine_tuning.jobs import FineTuningJobCheckpoint
from pydantic import BaseModel, ConfigDict, computed_field

from jobs_db import (
    FINAL_STATUSES,
    Database,
    DatabaseError,
    FinetuneJob,
    Target,
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
from labmgr.errors import LabmgrError, api_message
from labmgr.finetuning.curves.frame import ResultsFileError, parse_results_file
from labmgr.finetuning.jobs.queue import (
    QueuedJobState,
    QueueOutcome,
    SubmittedJob,
    UncheckedJob,
    submit_queued,
)
from labmgr.finetuning.registry.database import lab_database, require_writable
from labmgr.finetuning.registry.records import (
    checkpoint_models,
    event_records,
    job_phase,
    job_record,
    provided_suffix,
)
from labmgr.finetuning.tinker.control import progress_text, refresh, tinker_jobs_to_refresh
from labmgr.finetuning.tinker.params import PROVIDER as TINKER
from labmgr.routing import candidate_credentials, resolved_credentials
from labmgr.settings import Settings, load_settings

DEFAULT_CONCURRENCY = 16
SAFETY_CHECK_ALLOWANCE = timedelta(minutes=20)
"""Added to the API's training ETA for the usage-policy evaluation that follows training."""


class JobState(BaseModel):
    """One job as `update` found it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    job_id: str
    suffix: str | None
    key_env: str | None
    """The env var of the key that answered (never the key)."""
    previous_status: str
    status: str
    phase: str | None = None
    """What a running job is doing, from its events (e.g. usage policy evaluation)."""
    estimated_finish: datetime | None = None
    fine_tuned_model: str | None = None
    error: str | None = None
    checkpoints: int = 0
    """Checkpoint models recorded (not counting the final model)."""
    curves_stored: int = 0
    """1 when this update stored the job's training curves."""
    curves_problem: str | None = None
    """Why the job's results file could not be read, if it could not."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def real_eta(self) -> datetime | None:
        """Training ETA plus the usual time of the safety evaluation."""
        return self.estimated_finish + SAFETY_CHECK_ALLOWANCE if self.estimated_finish else None

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @computed_field  # type: ignore[prop-decorator]
    @property
    def newly_finished(self) -> bool:
        """True when this update saw the job reach a final status."""
        return self.is_final and self.previous_status != self.status


class UpdateSummary(BaseModel):
    """The result of one `update`."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    checked: list[JobState] = []
    """Jobs refreshed, in the database's order (oldest first)."""
    unchecked: list[UncheckedJob] = []
    requests: int = 0
    submitted: list[SubmittedJob] = []
    """Jobs queued at the daily limit that were sent to the API now."""
    queued: list[QueuedJobState] = []
    curves: int = 0
    """Jobs whose training curves were stored by this update."""

    @property
    def running(self) -> list[JobState]:
        return [job for job in self.checked if not job.is_final]

    @property
    def newly_finished(self) -> list[JobState]:
        return [job for job in self.checked if job.newly_finished]

    @property
    def still_running(self) -> bool:
        """True when a job is not final yet (queued locally ones included)."""
        return bool(self.running) or bool(self.queued)


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
    pass


def update(
    *, settings: Settings | None = None, concurrency: int = DEFAULT_CONCURRENCY
) -> UpdateSummary:
    """Send queued jobs whose time came (`submit_queued`), then refresh every non-final job,
    `concurrency` at once, each with a key of its project: status, events, models, checkpoints
    and curves. Jobs that cannot be checked are listed with the reason. In a loop: `aupdate`."""
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
        require_writable(settings, db)  # what it reads must be recorded (and queued jobs sent)
        tinker = _tinker_states(db)
        waiting = queued_jobs(db)
        missing = jobs_missing_curves(db)
        on_api = [job for job in non_final_jobs(db) if job.provider != TINKER]
        if not waiting and not missing and not on_api:
            return UpdateSummary(checked=tinker)
        with closing(Accounts(settings)) as accounts:
            credentials, failures = resolved_credentials(accounts)
        async with aclosing(ClientPool(settings)) as pool:
            queue = QueueOutcome()
            if waiting:
                queue = await asyncio.to_thread(submit_queued, db, pool, credentials)
            limit = asyncio.Semaphore(max(1, concurrency))
            refresh = _Refresh(db, pool, credentials, failures, limit)
            await refresh.run(on_api, missing)
    summary = refresh.summary
    summary.checked += tinker
    summary.requests += queue.requests
    summary.submitted, summary.queued = queue.submitted, queue.queued
    summary.unchecked += queue.unchecked
    return summary


def _tinker_states(db: Database) -> list[JobState]:
    """Tinker jobs as their workers recorded them; a running one whose worker died fails."""
    states = []
    for job in tinker_jobs_to_refresh(db):
        previous, job = refresh(db, job)
        error = (job.error_message or "").partition("\n")[0] if job.status == "failed" else None
        states.append(
            JobState(
                job_id=job.id,
                suffix=job.suffix,
                key_env=job.key_env,
                previous_status=previous,
                status=job.status,
                phase=progress_text(job) or None,
                fine_tuned_model=job.fine_tuned_model,
                error=error,
                checkpoints=_checkpoints(db, job.id),
            )
        )
    return states


def _checkpoints(target: Target, job_id: str) -> int:
    return sum(model.kind == "checkpoint" for model in job_models(target, job_id))


@contextmanager
def _api_errors(credential: Credential, what: str = "") -> Iterator[None]:
    try:
        yield
    except openai.APIStatusError as exc:
        raise _Unchecked(f"{what}HTTP {exc.status_code}: {api_message(exc)}") from None
    except openai.APIConnectionError:
        raise _Unchecked(f"could not reach {credential.base_url}") from None


@dataclass
class _Refresh:
    """One refresh of many jobs sharing the database, the clients and the concurrency cap."""

    db: Database
    pool: ClientPool
    credentials: Sequence[Credential]
    failures: dict[str, str]
    limit: asyncio.Semaphore
    summary: UpdateSummary = field(default_factory=UpdateSummary)

    def unchecked(self, job: FinetuneJob | JobState, reason: str) -> None:
        job_id = job.job_id if isinstance(job, JobState) else job.id
        self.summary.unchecked.append(UncheckedJob(job_id=job_id, suffix=job.suffix, reason=reason))

    async def run(self, jobs: Sequence[FinetuneJob], missing: Sequence[FinetuneJob]) -> None:
        results, problems = await asyncio.gather(
            asyncio.gather(*(self.one(job) for job in jobs)),
            asyncio.gather(*(self.curves_only(job) for job in missing)),
        )
        for job, result in zip(jobs, results, strict=True):
            if isinstance(result, str):
                self.unchecked(job, result)
                continue
            self.summary.checked.append(result)
            self.summary.curves += result.curves_stored
            if result.curves_problem:
                self.unchecked(result, f"training curves: {result.curves_problem}")
        for job, problem in zip(missing, problems, strict=True):
            if problem:
                self.unchecked(job, f"training curves: {problem}")

    async def one(self, job: FinetuneJob) -> JobState | str:
        async with self.limit:
            try:
                fetched = await self.fetch(job)
            except _Unchecked as unchecked:
                return str(unchecked)
        try:
            return _record(self.db, job, fetched)
        except DatabaseError as exc:
            return f"database: {exc}"

    async def curves_only(self, job: FinetuneJob) -> str | None:
        """Store the curves of a finished job whose results file is known but not stored."""
        file_id = job.result_file_id or ""
        curve: TrainingCurve | None = None
        problem: str | None = f"results file {file_id} was not found with any key of its project"
        async with self.limit:
            try:
                for credential in self.candidates(job):
                    self.summary.requests += 1
                    with _api_errors(credential, f"results file {file_id}: "):
                        try:
                            client = self.pool.async_client(credential)
                            curve, problem = await _read_curves(client, job.id, file_id)
                            break
                        except openai.NotFoundError:
                            continue
            except _Unchecked as unchecked:
                return str(unchecked)
        if curve is not None:
            try:
                store_curve(self.db, curve)
            except DatabaseError as exc:
                return f"database: {exc}"
            self.summary.curves += 1
        return problem

    def candidates(self, job: FinetuneJob) -> list[Credential]:
        found = candidate_credentials(job, self.credentials)
        if found:
            return found
        owner = f"project {job.project_id}" if job.project_id else ""
        owner = owner or f"organization {job.organization_id}"
        created = f" (it was created with {job.key_env})" if job.key_env else ""
        why = "".join(f"; {self.failures[key].rstrip('.')}" for key in sorted(self.failures))
        raise _Unchecked(f"no configured key belongs to {owner}{created}{why}")

    async def fetch(self, job: FinetuneJob) -> _Fetched:
        tried = []
        for credential in self.candidates(job):
            client = self.pool.async_client(credential)
            started = datetime.now(UTC)
            self.summary.requests += 1
            with _api_errors(credential, f"{credential.key_env}: "):
                try:
                    remote = await client.fine_tuning.jobs.retrieve(job.id)
                except openai.NotFoundError:
                    tried.append(credential.key_env)
                    continue
            with _api_errors(credential, "reading events: "):
                return await self.details(client, _Fetched(remote, credential, started))
        raise _Unchecked(f"not found with {', '.join(tried)} (deleted, or another project's job)")

    async def details(self, client: AsyncOpenAI, fetched: _Fetched) -> _Fetched:
        """Events (all pages once final), and for a succeeded job checkpoints and curves."""
        remote = fetched.job
        final = remote.status in FINAL_STATUSES
        events = client.fine_tuning.jobs.list_events(remote.id, limit=100)
        fetched.events = await self.pages(events, every=final)
        if remote.status != "succeeded":
            return fetched
        checkpoints = client.fine_tuning.jobs.checkpoints.list(remote.id, limit=100)
        fetched.checkpoints = await self.pages(checkpoints)
        if remote.result_files:
            self.summary.requests += 1
            file_id = remote.result_files[0]
            fetched.curve, fetched.curve_problem = await _read_curves(client, remote.id, file_id)
        return fetched

    async def pages(self, first: Any, *, every: bool = True) -> list[Any]:
        """The items of the first page (a request), and with `every` of all the pages."""
        self.summary.requests += 1
        page = await first
        items = list(page.data)
        while every and page.has_next_page():
            self.summary.requests += 1
            page = await page.get_next_page()
            items.extend(page.data)
        return items


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


def _record(db: Database, before: FinetuneJob, fetched: _Fetched) -> JobState:
    remote, credential = fetched.job, fetched.credential
    phase = job_phase(remote.status, fetched.events)
    record = job_record(
        remote, refreshed_at=fetched.refreshed_at, credential=credential, phase=phase
    )
    if not before.suffix:
        record.suffix = provided_suffix(remote) or record.suffix
    with db.session() as session:
        if upsert_job(session, record):
            # Events never change once listed: add the new ones only (cheap on each poll).
            stored = {event.id for event in job_events(session, remote.id)}
            session.add_all(
                e for e in event_records(remote.id, fetched.events) if e.id not in stored
            )
            if remote.status == "succeeded":
                hyper: dict[str, Any] = record.hyperparameters_actual or {}
                models = checkpoint_models(fetched.checkpoints, hyper.get("n_epochs"))
                replace_checkpoints(session, remote.id, models)
                if fetched.curve is not None:
                    store_curve(session, fetched.curve)
        n_checkpoints = _checkpoints(session, remote.id)
    return JobState(
        job_id=remote.id,
        suffix=before.suffix or record.suffix,
        key_env=credential.key_env,
        previous_status=before.status,
        status=remote.status,
        phase=phase,
        estimated_finish=record.estimated_finish,
        fine_tuned_model=remote.fine_tuned_model,
        error=remote.error.message if remote.status == "failed" and remote.error else None,
        checkpoints=n_checkpoints,
        curves_stored=int(fetched.curve is not None),
        curves_problem=fetched.curve_problem,
    )
