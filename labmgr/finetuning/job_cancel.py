"""`cancel`: stop a job on the API and record its new status."""

from __future__ import annotations

from datetime import UTC, datetime

import openai

from jobs_db import FinetuneJob, get_job, upsert_job
from labmgr.accounts import Accounts
from labmgr.finetuning.api_errors import api_message
from labmgr.finetuning.errors import FineTuningApiError, UnknownJob
from labmgr.finetuning.job_snapshot import job_record
from labmgr.finetuning.lab_db import lab_database
from labmgr.finetuning.lab_queries import resolve_job_id
from labmgr.finetuning.routing import candidate_credentials, resolved_credentials
from labmgr.settings import Settings, load_settings

__all__ = ["cancel"]


def cancel(job_id: str, *, settings: Settings | None = None) -> FinetuneJob:
    """Cancel `job_id` with a key of its project; returns the job as recorded afterwards.

    `job_id` may be shortened as `resolve_job_id` accepts (``ftjob-…a1b2``, a prefix).

    Raises `UnknownJob` when the lab does not hold the job or no key can see it, and
    `FineTuningApiError` when the API refuses (e.g. the job already finished).
    """
    settings = settings or load_settings()
    with lab_database(settings) as db:
        job_id = resolve_job_id(db, job_id)
        job = get_job(db, job_id)
        if job is None:  # deleted since it was found
            raise UnknownJob(f"Job {job_id} is not in the lab's database.")
        accounts = Accounts(settings)
        try:
            credentials, failures = resolved_credentials(accounts)
            for credential in candidate_credentials(job, credentials):
                client = accounts.pool.client(credential)
                started = datetime.now(UTC)
                try:
                    remote = client.fine_tuning.jobs.cancel(job_id)
                except openai.NotFoundError:
                    continue
                except openai.APIStatusError as exc:
                    raise FineTuningApiError(
                        f"The API refused to cancel job {job_id}: HTTP {exc.status_code}: "
                        f"{api_message(exc)}",
                        hint="Run `labmgr jobs update` to see its current status.",
                    ) from None
                except openai.APIConnectionError:
                    raise FineTuningApiError(
                        f"Cancelling job {job_id} failed: could not reach {credential.base_url}.",
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
