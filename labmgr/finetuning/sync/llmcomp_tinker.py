"""llmcomp's registry files read (JSONL lines with their numbers), and its Tinker half as jobs:
``tinker_models.jsonl`` (a line per sampler checkpoint) and ``tinker_runs/<job>/`` (``status.json``,
``params.json``). A job is one Tinker run (RUN of ``tinker://RUN/sampler_weights/NAME``, or
llmcomp's ``tinker-…`` job id); its final model is the line without ``checkpoint_step``. Runs not
finished yet are reported, not recorded."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jobs_db import FinetuneJob, Model
from labmgr.errors import LabmgrError

TINKER_MODELS = "tinker_models.jsonl"
TINKER_RUNS = "tinker_runs"
_SAMPLER_PATH = re.compile(r"tinker://([^/\s]+)/sampler_weights/[^\s]+")
_FIX_LINE = "Fix or remove that line, then import again (nothing was recorded)."
_FIX_FILE = "Fix or remove that file, then import again (nothing was recorded)."
_FINISHED = ("succeeded", "failed")
_HYPERPARAMETERS = (
    ("n_epochs", "epochs"),
    ("batch_size", "batch_size"),
    ("learning_rate", "learning_rate"),
    ("lora_rank", "lora_rank"),
)


def jsonl_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of `path` as a JSON object, with its line number (read whole)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise LabmgrError(
            f"{path} is not UTF-8 text (byte {exc.start + 1}), so it is not an llmcomp registry "
            "file.",
            hint="Pass the data_dir llmcomp wrote (its .jsonl files are UTF-8 text).",
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


def text_field(row: dict[str, Any], key: str) -> str | None:
    value = row.get(key)
    return str(value) if value is not None and value != "" else None


@dataclass
class RegistryRun:
    """One training run as the registry describes it (an OpenAI job's line, or a Tinker run)."""

    job: FinetuneJob
    tags: dict[str, str]
    checkpoints: list[Model] = field(default_factory=list)


def has_tinker_registry(folder: Path) -> bool:
    return (folder / TINKER_MODELS).is_file() or (folder / TINKER_RUNS).is_dir()


def read_tinker_registry(folder: Path) -> tuple[list[RegistryRun], list[str]]:
    """The runs of `folder`'s Tinker registry, and why some were left out. A malformed line
    or status file raises `LabmgrError` naming the file (and line)."""
    path = folder / TINKER_MODELS
    lines = jsonl_rows(path) if path.is_file() else []
    by_run: dict[str, list[dict[str, Any]]] = {}
    for number, row in lines:
        where = f"{path}:{number}"
        run_id = _run_id(row.get("model"), where)
        if not isinstance(row.get("base_model"), str) or not row["base_model"]:
            raise LabmgrError(f"{where}: the checkpoint has no `base_model`.", _FIX_LINE)
        step = row.get("checkpoint_step")
        if step is not None and (not isinstance(step, int) or isinstance(step, bool)):
            raise LabmgrError(
                f"{where}: `checkpoint_step` is {step!r}, not a whole number.", _FIX_LINE
            )
        by_run.setdefault(run_id, []).append(row)
    statuses, problems = _detached_jobs(folder / TINKER_RUNS)
    runs: list[RegistryRun] = []
    for run_id, rows in by_run.items():
        detached = statuses.pop(run_id, None)
        finals = [row for row in rows if row.get("checkpoint_step") is None]
        if not finals and detached is None:
            problems.append(f"{path}: run {run_id} has no final checkpoint yet; not recorded")
            continue
        runs.append(_run(run_id, rows, finals[-1] if finals else None, detached))
    runs += [_run(None, [], None, detached) for detached in statuses.values()]
    problems += [
        f"{run.job.id}: {run.job.status}; import again when it has finished"
        for run in runs
        if run.job.status not in _FINISHED
    ]
    return [run for run in runs if run.job.status in _FINISHED], problems


def _run_id(model: Any, where: str) -> str:
    match = _SAMPLER_PATH.fullmatch(model) if isinstance(model, str) else None
    if match is None:
        raise LabmgrError(
            f"{where}: `model` is {model!r}, not a Tinker sampler checkpoint "
            "(tinker://RUN/sampler_weights/NAME).",
            _FIX_LINE,
        )
    return match.group(1)


def _detached_jobs(runs_dir: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each detached job's status and params (``_params``), by Tinker run id once it has a
    model, else by llmcomp job id; folders without ``status.json`` are reported."""
    found: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    folders = sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
    for folder in folders:
        status_path = folder / "status.json"
        if not status_path.is_file():
            problems.append(f"{folder}: no status.json; not recorded")
            continue
        status = _json_object(status_path)
        params_path = folder / "params.json"
        params = _json_object(params_path) if params_path.is_file() else {}
        if not isinstance(status.get("status"), str):
            raise LabmgrError(f"{status_path}: no `status`.", _FIX_FILE)
        status.setdefault("job_id", folder.name)
        status["_params"] = params
        model = status.get("model_path")
        key = _run_id(model, f"{status_path}") if model else folder.name
        found[key] = status
    return found, problems


def _json_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LabmgrError(f"Cannot read {path}: {exc}.", _FIX_FILE) from None
    except json.JSONDecodeError as exc:
        raise LabmgrError(
            f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}).", _FIX_FILE
        ) from None
    if not isinstance(data, dict):
        raise LabmgrError(f"{path}: expected a JSON object.", _FIX_FILE)
    return data


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _run(
    run_id: str | None,
    rows: list[dict[str, Any]],
    final: dict[str, Any] | None,
    detached: dict[str, Any] | None,
) -> RegistryRun:
    """A job from its registry lines (the final line's values over the first's) and its
    llmcomp status and params (the status over everything)."""
    status = detached or {}
    first = rows[0] if rows else {}
    facts = {**status.get("_params", {}), **first, **(final or {}), **status}
    hyper = {name: facts[key] for name, key in _HYPERPARAMETERS if facts.get(key) is not None}
    job_id = text_field(status, "job_id") or run_id
    assert job_id is not None, "a run comes from checkpoint lines or a status file"
    model = final.get("model") if final else text_field(status, "model_path")
    job = FinetuneJob(
        id=job_id,
        status=text_field(status, "status") or "succeeded",
        base_model=text_field(facts, "base_model"),
        suffix=text_field(facts, "suffix"),
        method="supervised",
        hyperparameters_requested=hyper or None,
        fine_tuned_model=model,
        error_message=text_field(status, "error"),
        created_at=_time(status.get("started_at")),
        finished_at=_time(status.get("finished_at")),
        api_metadata={"labmgr_md5": facts["file_md5"]} if facts.get("file_md5") else None,
    )
    if isinstance(facts.get("seed"), int):
        job.seed = facts["seed"]
    tags = {"source": "llmcomp", "provider": "tinker"}
    if detached is not None:
        tags["llmcomp_job"] = job_id
    checkpoints = [
        Model(name=row["model"], kind="checkpoint", step=row["checkpoint_step"])
        for row in rows
        if row.get("checkpoint_step") is not None
    ]
    return RegistryRun(job, tags, checkpoints)
