"""Importing jobs made elsewhere: `import_from_api` rebuilds or completes the database from every
key's job list, `import_llmcomp` takes over an llmcomp registry (its OpenAI and Tinker jobs)."""

from __future__ import annotations

import re
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai
from openai import OpenAI
from pydantic import BaseModel

from jobs_db import (
    Database,
    FinetuneJob,
    Model,
    TrainingFile,
    get_file,
    get_job,
    job_models,
    replace_checkpoints,
    upsert_file,
    upsert_job,
)
from labmgr.accounts import Accounts, Credential
from labmgr.errors import LabmgrError, api_message
from labmgr.finetuning.jobs.request import BASE, FILE_NAME, MD5, is_labmgr_job, tags_from_metadata
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.registry.records import checkpoint_models, job_record, provided_suffix
from labmgr.finetuning.sync.llmcomp_tinker import (
    RegistryRun,
    has_tinker_registry,
    jsonl_rows,
    read_tinker_registry,
    text_field,
)
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
    with closing(Accounts(settings)) as accounts:
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


_STEP = re.compile(r":ckpt-step-(\d+)$")
_UNKNOWN_STATUS = "unknown"
"""Status of an llmcomp job with neither status nor model: non-final, so `update` checks it."""
_HYPERPARAMETERS = (
    ("n_epochs", "epochs"),
    ("batch_size", "batch_size"),
    ("learning_rate_multiplier", "learning_rate_multiplier"),
)


def _job(row: dict[str, Any]) -> FinetuneJob:
    status = text_field(row, "status") or ("succeeded" if row.get("model") else _UNKNOWN_STATUS)
    hyper = {name: row[key] for name, key in _HYPERPARAMETERS if row.get(key) is not None}
    fields: dict[str, Any] = {
        "id": row["id"],
        "status": status,
        "organization_id": text_field(row, "organization_id"),
        "base_model": text_field(row, "base_model"),
        "suffix": text_field(row, "suffix"),
        "training_file_id": text_field(row, "file_id"),
        "method": "supervised",
        "hyperparameters_requested": hyper or None,
        "fine_tuned_model": text_field(row, "model"),
        "api_metadata": {"labmgr_md5": row["file_md5"]} if row.get("file_md5") else None,
    }
    if isinstance(row.get("seed"), int):
        fields["seed"] = row["seed"]
    return FinetuneJob(**fields)


def _checkpoints(row: dict[str, Any]) -> list[Model]:
    epochs = row.get("epochs") if isinstance(row.get("epochs"), int) else None
    found = []
    for index in range(1, 100):
        name = row.get(f"model-{index}")
        if not isinstance(name, str):
            break
        match = _STEP.search(name)
        if match is None:
            continue  # without a step the row cannot be a checkpoint; skip it
        epoch = epochs - index if epochs and epochs > index else None
        found.append(Model(name=name, kind="checkpoint", step=int(match.group(1)), epoch=epoch))
    return found


def import_llmcomp(directory: str | Path, *, settings: Settings | None = None) -> ImportSummary:
    """Record the jobs (tagged ``source=llmcomp``, Tinker's ``provider=tinker`` too), models,
    checkpoints and files of an llmcomp ``data_dir``. A malformed line records nothing; jobs the
    lab holds stay as they are; OpenAI jobs without a status are ``unknown`` until `update`."""
    settings = settings or load_settings()
    folder = Path(directory)
    jobs_path, files_path = folder / "jobs.jsonl", folder / "files.jsonl"
    if not jobs_path.is_file() and not has_tinker_registry(folder):
        why = "is a file" if folder.is_file() else "has no jobs.jsonl nor tinker_models.jsonl"
        if not folder.exists():
            why = "does not exist"
        raise LabmgrError(
            f"{folder} is not an llmcomp registry: it {why}.",
            hint="Pass the llmcomp data_dir (default llmcomp_models/) holding jobs.jsonl or "
            "tinker_models.jsonl.",
        )
    tinker_runs, problems = read_tinker_registry(folder)
    job_rows = jsonl_rows(jobs_path) if jobs_path.is_file() else []
    file_rows = jsonl_rows(files_path) if files_path.is_file() else []
    for path, rows, what in ((jobs_path, job_rows, "job"), (files_path, file_rows, "file")):
        for number, row in rows:
            if not isinstance(row.get("id"), str) or not row["id"]:
                raise LabmgrError(f"{path}:{number}: the {what} has no `id`.")
    summary = ImportSummary(problems=problems)
    with lab_database(settings) as db, db.session() as session:
        for _, row in file_rows:
            upsert_file(session, _file(row["id"], row, name="name", md5="md5"))
            summary.files += 1
        runs: list[tuple[RegistryRun, dict[str, Any]]] = [
            (RegistryRun(_job(row), {"source": "llmcomp"}, _checkpoints(row)), row)
            for _, row in job_rows
        ]
        for run, row in runs + [(tinker, {}) for tinker in tinker_runs]:
            summary.jobs_seen += 1
            if get_job(session, run.job.id) is not None:
                continue  # the lab already tracks it, probably more freshly than llmcomp
            summary.jobs_new += 1
            upsert_job(session, run.job, tags=run.tags)
            if run.checkpoints:
                replace_checkpoints(session, run.job.id, run.checkpoints)
            summary.models += bool(run.job.fine_tuned_model) + len(run.checkpoints)
            if row.get("file_id") and row.get("file_name"):
                upsert_file(session, _file(row["file_id"], row, name="file_name", md5="file_md5"))
    return summary


def _file(file_id: str, row: dict[str, Any], *, name: str, md5: str) -> TrainingFile:
    """A training file llmcomp recorded (its path under `name`, its md5 under `md5`)."""
    path = text_field(row, name)
    return TrainingFile(
        id=file_id,
        organization_id=text_field(row, "organization_id"),
        local_path=path,
        filename=Path(path).name if path else None,
        md5=text_field(row, md5),
        purpose="fine-tune",
    )
