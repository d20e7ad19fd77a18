"""`cancel`, `pause`, `resume`: act on a job through the API and record its new status.

A job queued locally (never sent) is cancelled in the database alone; it cannot be paused.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

import openai

from jobs_db import (
    QUEUED_LOCALLY,
    Database,
    FinetuneJob,
    cancel_queued_job,
    get_job,
    upsert_job,
)
from labmgr.accounts import Accounts
from labmgr.finetuning.api_errors import api_message
from labmgr.finetuning.errors import FineTuningApiError, UnknownJob
from labmgr.finetuning.job_snapshot import job_record
from labmgr.finetuning.lab_db import lab_database
from labmgr.finetuning.lab_queries import resolve_job_id
from labmgr.routing import candidate_credentials, resolved_credentials
from labmgr.settings import Settings, load_settings

__all__ = ["cancel", "pause", "resume"]

Action = Literal["cancel", "pause", "resume"]
_PAST = {"cancel": "cancelled", "pause": "paused", "resume": "resumed"}


def cancel(job_id: str, *, settings: Settings | None = None) -> FinetuneJob:
    """Cancel `job_id` with a key of its project; returns the job as recorded afterwards.

    `job_id` may be shortened as `resolve_job_id` accepts (``ftjob-…a1b2``, a prefix). A
    job queued locally is cancelled in the database (no request). Raises `UnknownJob` when
    the lab does not hold the job or no key can see it, and `FineTuningApiError` when the
    API refuses (e.g. the job already finished).
    """
    return _act("cancel", job_id, settings or load_settings())


def pause(job_id: str, *, settings: Settings | None = None) -> FinetuneJob:
    """Pause a queued or running job (status ``paused``); `resume` continues it."""
    return _act("pause", job_id, settings or load_settings())


def resume(job_id: str, *, settings: Settings | None = None) -> FinetuneJob:
    """Resume a paused job (it queues again, then trains on from where it stopped)."""
    return _act("resume", job_id, settings or load_settings())


def _act(action: Action, job_id: str, settings: Settings) -> FinetuneJob:
    with lab_database(settings) as db:
        job_id = resolve_job_id(db, job_id)
        job = get_job(db, job_id)
        if job is None:  # deleted since it was found
            raise UnknownJob(f"Job {job_id} is not in the lab's database.")
        if job.status == QUEUED_LOCALLY:
            return _act_on_queued(action, db, job)
        accounts = Accounts(settings)
        try:
            credentials, failures = resolved_credentials(accounts)
            for credential in candidate_credentials(job, credentials):
                client = accounts.pool.client(credential)
                started = datetime.now(UTC)
                jobs_api = client.fine_tuning.jobs
                call = {"cancel": jobs_api.cancel, "pause": jobs_api.pause}.get(
                    action, jobs_api.resume
                )
                try:
                    remote = call(job_id)
                except openai.NotFoundError:
                    continue
                except openai.APIStatusError as exc:
                    raise FineTuningApiError(
                        f"The API refused to {action} job {job_id}: HTTP {exc.status_code}: "
                        f"{api_message(exc)}",
                        hint="Run `labmgr jobs update` to see its current status.",
                    ) from None
                except openai.APIConnectionError:
                    raise FineTuningApiError(
                        f"Could not {action} job {job_id}: could not reach {credential.base_url}.",
                        hint="Check the network and try again.",
                    ) from None
                record = job_record(
                    remote,
                    refreshed_at=started,
                    key_env=credential.key_env,
                    endpoint=credential.base_url,
                    project_id=credential.project,
                    phase=None,
                )
                upsert_job(db, record)
                return get_job(db, job_id) or record
        finally:
            accounts.close()
    checked = "".join(f"; {reason.rstrip('.')}" for _, reason in sorted(failures.items()))
    raise UnknownJob(
        f"No configured key can see job {job_id} "
        f"(it was created with {job.key_env or 'an unknown key'}){checked}.",
        hint="Set the key of the job's project (OPENAI_API_KEY_<NAME>) or fix the endpoint "
        "named here; `labmgr keys` checks every key.",
    )


def _act_on_queued(action: Action, db: Database, job: FinetuneJob) -> FinetuneJob:
    if action != "cancel":
        raise FineTuningApiError(
            f"Job {job.id} is queued locally (the daily limit held it back): it is not on the "
            f"API yet, so it cannot be {_PAST[action]}.",
            hint=f"Cancel it with `labmgr finetune cancel {job.id}`, or wait for "
            "`labmgr jobs update` to send it.",
        )
    if not cancel_queued_job(db, job.id, now=datetime.now(UTC)):
        raise FineTuningApiError(
            f"Job {job.id} is being sent to the API by `labmgr jobs update` right now.",
            hint="Run `labmgr jobs update`, then cancel the job it became.",
        )
    return get_job(db, job.id) or job
