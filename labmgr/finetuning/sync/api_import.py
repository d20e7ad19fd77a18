"""`import_from_api`: rebuild or complete the database from every key's job list."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import openai
from openai import OpenAI
from pydantic import BaseModel

from jobs_db import (
    Database,
    FinetuneJob,
    TrainingFile,
    get_file,
    get_job,
    job_models,
    replace_checkpoints,
    upsert_file,
    upsert_job,
)
from labmgr.accounts import Accounts, Credential
from labmgr.errors import api_message
from labmgr.finetuning.jobs.request import BASE, FILE_NAME, MD5, is_labmgr_job, tags_from_metadata
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.registry.records import checkpoint_models, job_record, provided_suffix
from labmgr.routing import resolved_credentials
from labmgr.settings import Settings, load_settings


class ImportSummary(BaseModel):
    """What an import recorded: jobs read and new, models (final and checkpoints) and files
    recorded, and the keys or lines that could not be read, with the reason."""

    jobs_seen: int = 0
    jobs_new: int = 0
    models: int = 0
    files: int = 0
    problems: list[str] = []


def import_from_api(*, settings: Settings | None = None, checkpoints: bool = True) -> ImportSummary:
    """Record every job each configured key can list, with tags (from labmgr's metadata)
    and files; existing rows are completed, never overwritten by an older snapshot. With
    `checkpoints`, succeeded jobs get their checkpoint models (one request per job)."""
    settings = settings or load_settings()
    summary = ImportSummary()
    accounts = Accounts(settings)
    try:
        credentials, failures = resolved_credentials(accounts)
        summary.problems += [f"{env}: {reason}" for env, reason in failures.items()]
        with lab_database(settings) as db:
            for credential in credentials:
                try:
                    client = accounts.pool.client(credential)
                    _import_key(db, client, credential, summary, checkpoints)
                except openai.APIStatusError as exc:
                    summary.problems.append(
                        f"{credential.key_env}: HTTP {exc.status_code}: {api_message(exc)}"
                    )
                except openai.APIConnectionError:
                    summary.problems.append(
                        f"{credential.key_env}: could not reach {credential.base_url}"
                    )
    finally:
        accounts.close()
    return summary


def _import_key(
    db: Database, client: OpenAI, credential: Credential, summary: ImportSummary, checkpoints: bool
) -> None:
    for remote in client.fine_tuning.jobs.list(limit=100):
        summary.jobs_seen += 1
        stored = get_job(db, remote.id)
        existed = stored is not None
        metadata = remote.metadata or {}
        known: dict[str, Any] = {"endpoint": credential.base_url}
        if stored is None or not stored.key_env:
            known.update(key_env=credential.key_env, project_id=credential.project)
        if provided_suffix(remote):
            known["suffix"] = provided_suffix(remote)
        if not existed:
            known["base_model"] = metadata.get(BASE) or remote.model
        record: FinetuneJob = job_record(remote, refreshed_at=datetime.now(UTC), **known)
        tags = tags_from_metadata(metadata) if is_labmgr_job(metadata) else {}
        upsert_job(db, record, tags=tags)
        summary.jobs_new += not existed
        if is_labmgr_job(metadata) and get_file(db, remote.training_file) is None:
            upsert_file(
                db,
                TrainingFile(
                    id=remote.training_file,
                    organization_id=credential.organization,
                    project_id=credential.project,
                    key_env=credential.key_env,
                    endpoint=credential.base_url,
                    filename=metadata.get(FILE_NAME),
                    md5=metadata.get(MD5),
                    purpose="fine-tune",
                ),
            )
            summary.files += 1
        if remote.status == "succeeded":
            held = job_models(db, remote.id)
            if checkpoints and not any(m.kind == "checkpoint" for m in held):
                listed = list(client.fine_tuning.jobs.checkpoints.list(remote.id, limit=100))
                hyper = record.hyperparameters_actual or {}
                replace_checkpoints(db, remote.id, checkpoint_models(listed, hyper.get("n_epochs")))
            summary.models += len(job_models(db, remote.id)) - len(held)
