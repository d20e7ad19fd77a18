"""`import_llmcomp`: take over an llmcomp registry (``jobs.jsonl``, ``files.jsonl``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jobs_db import (
    FinetuneJob,
    Model,
    TrainingFile,
    get_job,
    replace_checkpoints,
    upsert_file,
    upsert_job,
)
from labmgr.errors import LabmgrError
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.sync.api_import import ImportSummary
from labmgr.settings import Settings, load_settings

_STEP = re.compile(r":ckpt-step-(\d+)$")
_UNKNOWN_STATUS = "unknown"
"""Status of an llmcomp job with neither status nor model: non-final, so `update` checks it."""


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of `path` as a JSON object, with its line number (read whole)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise LabmgrError(
            f"{path} is not UTF-8 text (byte {exc.start + 1}), so it is not an llmcomp registry "
            "file.",
            hint="Pass the llmcomp data_dir whose jobs.jsonl llmcomp wrote.",
        ) from None
    except OSError as exc:
        raise LabmgrError(
            f"Cannot read {path}: {exc.strerror or exc}.",
            hint="Check the file's permissions, or copy the registry somewhere readable.",
        ) from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LabmgrError(
                f"{path}:{number}: not valid JSON ({exc.msg}, column {exc.colno}).",
                hint="Fix or remove that line, then import again (nothing was recorded "
                "from this file).",
            ) from None
        if not isinstance(row, dict):
            raise LabmgrError(f"{path}:{number}: expected a JSON object.")
        rows.append((number, row))
    return rows


def _text(row: dict[str, Any], key: str) -> str | None:
    value = row.get(key)
    return str(value) if value is not None and value != "" else None


def _job(row: dict[str, Any]) -> FinetuneJob:
    status = _text(row, "status") or ("succeeded" if row.get("model") else _UNKNOWN_STATUS)
    hyper = {
        name: row[source]
        for name, source in (
            ("n_epochs", "epochs"),
            ("batch_size", "batch_size"),
            ("learning_rate_multiplier", "learning_rate_multiplier"),
        )
        if source in row and row[source] is not None
    }
    fields: dict[str, Any] = {
        "id": row["id"],
        "status": status,
        "organization_id": _text(row, "organization_id"),
        "base_model": _text(row, "base_model"),
        "suffix": _text(row, "suffix"),
        "training_file_id": _text(row, "file_id"),
        "method": "supervised",
        "hyperparameters_requested": hyper or None,
        "fine_tuned_model": _text(row, "model"),
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
    """Record the jobs (tagged ``source=llmcomp``), models, checkpoints and files of an llmcomp
    ``data_dir``. Both files are read whole first, so a malformed line (reported with its
    number) records nothing; jobs the lab holds are left as they are; jobs without a status
    are marked ``unknown`` for ``labmgr jobs update`` to check."""
    settings = settings or load_settings()
    folder = Path(directory)
    jobs_path, files_path = folder / "jobs.jsonl", folder / "files.jsonl"
    if not jobs_path.is_file():
        why = "is a file" if folder.is_file() else "has no jobs.jsonl"
        if not folder.exists():
            why = "does not exist"
        raise LabmgrError(
            f"{folder} is not an llmcomp registry: it {why}.",
            hint="Pass the llmcomp data_dir (default llmcomp_models/) holding jobs.jsonl.",
        )
    job_rows = _rows(jobs_path)
    file_rows = _rows(files_path) if files_path.is_file() else []
    for path, rows, what in ((jobs_path, job_rows, "job"), (files_path, file_rows, "file")):
        for number, row in rows:
            if not isinstance(row.get("id"), str) or not row["id"]:
                raise LabmgrError(f"{path}:{number}: the {what} has no `id`.")
    summary = ImportSummary()
    with lab_database(settings) as db, db.session() as session:
        for _, row in file_rows:
            upsert_file(session, _file(row["id"], row, name="name", md5="md5"))
            summary.files += 1
        for _, row in job_rows:
            summary.jobs_seen += 1
            if get_job(session, row["id"]) is not None:
                continue  # the lab already tracks it, probably more freshly than llmcomp
            summary.jobs_new += 1
            upsert_job(session, _job(row), tags={"source": "llmcomp"})
            checkpoints = _checkpoints(row)
            if checkpoints:
                replace_checkpoints(session, row["id"], checkpoints)
            summary.models += bool(row.get("model")) + len(checkpoints)
            if row.get("file_id") and row.get("file_name"):
                upsert_file(session, _file(row["file_id"], row, name="file_name", md5="file_md5"))
    return summary


def _file(file_id: str, row: dict[str, Any], *, name: str, md5: str) -> TrainingFile:
    """A training file llmcomp recorded (its path under `name`, its md5 under `md5`)."""
    path = _text(row, name)
    return TrainingFile(
        id=file_id,
        organization_id=_text(row, "organization_id"),
        local_path=path,
        filename=Path(path).name if path else None,
        md5=_text(row, md5),
        purpose="fine-tune",
    )
