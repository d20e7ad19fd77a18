"""`cancel`, `pause`, `resume` and `delete_model`, through the API with a key of the job's
project (a queued job in the database alone, a Tinker job through `tinker.control`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from typing import Any, Literal

import openai

from jobs_db import (
    QUEUED_LOCALLY,
    Database,
    FinetuneJob,
    Model,
    cancel_queued_job,
    get_job,
    mark_model_deleted,
    select_models,
    upsert_job,
)
from labmgr.accounts import Accounts, Credential
from labmgr.errors import FineTuningApiError, UnknownJob, UnknownModel, api_message
from labmgr.finetuning.jobs.request import REQUEST
from labmgr.finetuning.jobs.submit import SENT_PHASE, find_by_request
from labmgr.finetuning.registry.database import find_job, lab_database
from labmgr.finetuning.registry.records import job_record
from labmgr.finetuning.tinker import control as tinker_control
from labmgr.finetuning.tinker.params import PROVIDER as TINKER
from labmgr.routing import candidate_credentials, resolved_credentials
from labmgr.settings import Settings, load_settings

Action = Literal["cancel", "pause", "resume"]
_PAST = {"cancel": "cancelled", "pause": "paused", "resume": "resumed"}


def cancel(job_id: str, *, settings: Settings | None = None) -> FinetuneJob:
    """Cancel `job_id` (or a short form of it); returns the job as recorded afterwards.
    Raises `UnknownJob` (not in the lab, or no key sees it) or `FineTuningApiError`."""
    return _act("cancel", job_id, settings or load_settings())


def pause(job_id: str, *, settings: Settings | None = None) -> FinetuneJob:
    """Pause a queued or running job (status ``paused``); `resume` continues it."""
    return _act("pause", job_id, settings or load_settings())


def resume(
    job_id: str, *, from_start: bool = False, settings: Settings | None = None
) -> FinetuneJob:
    """Resume a paused job (it queues again, then trains on from where it stopped). A failed
    or cancelled Tinker job goes on in a new worker from its last saved state (steps before
    it are not trained again), or with `from_start` from step 0."""
    return _act("resume", job_id, settings or load_settings(), from_start=from_start)


def _with_keys(
    settings: Settings,
    job: FinetuneJob,
    what: str,
    call: Callable[[Any, Credential], Any],
) -> tuple[Credential, Any] | str:
    """`call` (client, credential) with each key that may see `job`, until one finds it;
    when none does, why; `FineTuningApiError` when the API refuses."""
    with closing(Accounts(settings)) as accounts:
        credentials, failures = resolved_credentials(accounts)
        for credential in candidate_credentials(job, credentials):
            try:
                return credential, call(accounts.pool.client(credential), credential)
            except openai.NotFoundError:
                continue
            except openai.APIStatusError as exc:
                raise FineTuningApiError(
                    f"The API refused to {what}: HTTP {exc.status_code}: {api_message(exc)}",
                    hint="Run `labmgr jobs update` to see its current status; check that the "
                    "key belongs to its organization.",
                ) from None
            except openai.APIConnectionError:
                raise FineTuningApiError(
                    f"Could not {what}: could not reach {credential.base_url}.",
                    hint="Check the network and try again; nothing was recorded.",
                ) from None
    why = "".join(f"; {reason.rstrip('.')}" for _, reason in sorted(failures.items()))
    return f" (the job was created with {job.key_env or 'an unknown key'}){why}"


def _act(
    action: Action, job_id: str, settings: Settings, *, from_start: bool = False
) -> FinetuneJob:
    with lab_database(settings) as db:
        job = find_job(db, job_id)
        job_id = job.id
        if job.provider == TINKER:
            return _act_on_tinker(action, db, settings, job, from_start)
        if from_start:
            raise FineTuningApiError(
                f"Job {job_id} is an OpenAI job: --from-start applies to Tinker jobs only.",
                hint=f"Run `labmgr finetune resume {job_id}` without it.",
            )
        if job.status == QUEUED_LOCALLY:
            return _act_on_queued(action, db, settings, job)
        started = datetime.now(UTC)

        def call(client: Any, _: Credential) -> Any:
            return getattr(client.fine_tuning.jobs, action)(job_id)

        found = _with_keys(settings, job, f"{action} job {job_id}", call)
        if isinstance(found, str):
            raise UnknownJob(
                f"No configured key can see job {job_id}{found}.",
                hint="Set the key of the job's project (OPENAI_API_KEY_<NAME>) or fix the "
                "endpoint named here; `labmgr keys` checks every key.",
            )
        credential, remote = found
        record = job_record(remote, refreshed_at=started, credential=credential, phase=None)
        upsert_job(db, record)
        return get_job(db, job_id) or record


def _act_on_tinker(
    action: Action, db: Database, settings: Settings, job: FinetuneJob, from_start: bool
) -> FinetuneJob:
    if action == "cancel":
        return tinker_control.cancel(db, job)
    if action == "resume":
        return tinker_control.resume(db, settings, job, from_start=from_start)
    raise FineTuningApiError(
        f"Job {job.id} trains on Tinker, whose jobs cannot be paused.",
        hint=f"Cancel it (`labmgr finetune cancel {job.id}`); `labmgr finetune resume` "
        "continues it later from its last saved state.",
    )


def _act_on_queued(
    action: Action, db: Database, settings: Settings, job: FinetuneJob
) -> FinetuneJob:
    if action != "cancel":
        raise FineTuningApiError(
            f"Job {job.id} is queued locally (the daily limit held it back): it is not on the "
            f"API yet, so it cannot be {_PAST[action]}.",
            hint=f"Cancel it with `labmgr finetune cancel {job.id}`, or wait for "
            "`labmgr jobs update` to send it.",
        )
    now = datetime.now(UTC)
    held = job.claimed_until is not None and job.claimed_until > now
    if not held and (job.claimed_by is not None or job.phase == SENT_PHASE):
        _refuse_if_sent(settings, job)  # an update sent it, then died or lost the answer
    if not cancel_queued_job(db, job.id, now=now):
        raise FineTuningApiError(
            f"Job {job.id} is being sent to the API by `labmgr jobs update` right now.",
            hint="Run `labmgr jobs update`, then cancel the job it became.",
        )
    return get_job(db, job.id) or job


def _refuse_if_sent(settings: Settings, job: FinetuneJob) -> None:
    """Raise when the API holds the job queued as `job` (or cannot say whether it does)."""
    request_id = (job.create_request or {}).get("metadata", {}).get(REQUEST)
    if not request_id:
        return
    what = f"check whether job {job.id} reached the API"
    found = _with_keys(settings, job, what, lambda client, _: find_by_request(client, request_id))
    if isinstance(found, str):
        raise UnknownJob(
            f"Job {job.id} may have reached the API, and no configured key can check{found}.",
            hint="Set the key of the job's project; `labmgr keys` checks every key.",
        )
    remote = found[1]
    if remote is not None:
        raise FineTuningApiError(
            f"Job {job.id} reached the API as {remote.id}: cancelling it in the lab alone "
            "would leave that job training.",
            hint=f"Run `labmgr jobs update` to record it, then "
            f"`labmgr finetune cancel {remote.id}`.",
        )


def delete_model(name: str, *, settings: Settings | None = None) -> Model:
    """Delete the fine-tuned model (or checkpoint) `name` and mark it deleted; returns it.
    A model its own project's key no longer finds (404) is marked deleted too."""
    settings = settings or load_settings()
    with lab_database(settings) as db:
        models = select_models(db, checkpoints=True, include_base=True, include_deleted=True)
        model = next((model for model in models if model.name == name), None)
        if model is None:
            raise UnknownModel(
                f"Model {name} is not in the lab's database.",
                hint="See `labmgr models list --checkpoints`, or record models made elsewhere "
                "with `labmgr jobs import --from-api`.",
            )
        if model.kind == "base" or model.job_id is None:
            raise UnknownModel(
                f"{name} is a base model; only fine-tuned models can be deleted.",
                hint="Pass the name of a fine-tuned model (ft:…).",
            )
        if model.deleted_at is not None:
            return model
        job = get_job(db, model.job_id)
        if job is None:
            raise UnknownJob(f"The job of model {name} ({model.job_id}) is not in the database.")
        if job.provider == TINKER:
            raise UnknownModel(
                f"{name} is a Tinker checkpoint; labmgr does not delete those.",
                hint="Delete it with Tinker's own tools (`tinker checkpoint delete PATH`).",
            )

        def call(client: Any, credential: Credential) -> Any:
            try:
                return client.models.delete(name)
            except openai.NotFoundError:
                if job.project_id and credential.project == job.project_id:
                    return None  # its own project does not have it: it is gone already
                raise

        found = _with_keys(settings, job, f"delete {name}", call)
        if isinstance(found, str):
            raise UnknownModel(
                f"No key of its project can see model {name}{found}; nothing was marked.",
                hint="Set the key of the model's project; `labmgr keys` checks every key.",
            )
        model.deleted_at = datetime.now(UTC)
        mark_model_deleted(db, name, model.deleted_at)
        return model
