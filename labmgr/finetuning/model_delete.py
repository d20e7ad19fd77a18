"""`delete_model`: delete a fine-tuned model on the API and mark it deleted in the database."""

from __future__ import annotations

from datetime import UTC, datetime

import openai

from jobs_db import Model, get_job, mark_model_deleted, select_models
from labmgr.accounts import Accounts
from labmgr.finetuning.api_errors import api_message
from labmgr.finetuning.errors import FineTuningApiError, UnknownJob, UnknownModel
from labmgr.finetuning.lab_db import lab_database
from labmgr.routing import candidate_credentials, resolved_credentials
from labmgr.settings import Settings, load_settings

__all__ = ["delete_model"]


def delete_model(name: str, *, settings: Settings | None = None) -> Model:
    """Delete the fine-tuned model (or checkpoint) `name` and mark it deleted; returns it.

    The request goes with a key of the model's project. A model the API no longer has (its
    own project's key gets 404) is marked deleted too; one already marked costs nothing.
    Deleted models leave `model_groups` and model lists unless asked for. Raises
    `UnknownModel` for a name the lab does not hold or a base model, `FineTuningApiError`
    when the API refuses.
    """
    settings = settings or load_settings()
    with lab_database(settings) as db:
        found = [
            model
            for model in select_models(
                db, checkpoints=True, include_base=True, include_deleted=True
            )
            if model.name == name
        ]
        if not found:
            raise UnknownModel(
                f"Model {name} is not in the lab's database.",
                hint="See `labmgr models list --checkpoints`, or record models made elsewhere "
                "with `labmgr jobs import --from-api`.",
            )
        model = found[0]
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
        accounts = Accounts(settings)
        try:
            credentials, failures = resolved_credentials(accounts)
            candidates = candidate_credentials(job, credentials)
            if not candidates:
                checked = "".join(f"; {r.rstrip('.')}" for _, r in sorted(failures.items()))
                raise UnknownJob(
                    f"No configured key belongs to the project of model {name} (its job was "
                    f"created with {job.key_env or 'an unknown key'}){checked}.",
                    hint="Set the key of the model's project; `labmgr keys` checks every key.",
                )
            for credential in candidates:
                client = accounts.pool.client(credential)
                try:
                    client.models.delete(name)
                except openai.NotFoundError:
                    if job.project_id and credential.project == job.project_id:
                        break  # its own project does not have it: it is gone already
                    continue
                except openai.APIStatusError as exc:
                    raise FineTuningApiError(
                        f"The API refused to delete {name}: HTTP {exc.status_code}: "
                        f"{api_message(exc)}",
                        hint="Check that the key belongs to the model's organization.",
                    ) from None
                except openai.APIConnectionError:
                    raise FineTuningApiError(
                        f"Could not delete {name}: could not reach {credential.base_url}.",
                        hint="Check the network and try again; nothing was marked.",
                    ) from None
                break
            else:
                raise UnknownModel(
                    f"No key of its project can see model {name} on the API; nothing was marked.",
                    hint="Check the keys with `labmgr keys`.",
                )
        finally:
            accounts.close()
        deleted_at = datetime.now(UTC)
        mark_model_deleted(db, name, deleted_at)
        model.deleted_at = deleted_at
        return model
