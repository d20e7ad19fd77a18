"""Training curves: a job's results file (the API's per-step metrics CSV, maybe base64) parsed,
and the stored curves read back as a DataFrame (`CURVE_COLUMNS`, then every metric)."""

from __future__ import annotations

import base64
import binascii
import csv
import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jobs_db import (
    Database,
    DatabaseInputError,
    FinetuneJob,
    get_job,
    job_curves,
    model_groups,
    select_models,
)
from labmgr.errors import LabmgrError
from labmgr.finetuning.registry.database import find_job, lab_database, sentence
from labmgr.settings import Settings

if TYPE_CHECKING:
    import pandas as pd

CURVE_COLUMNS = ("group", "job_id", "model", "suffix", "seed", "step")


class NoCurves(LabmgrError):
    """None of the jobs asked for has training curves stored (yet)."""


def _group_of(job: FinetuneJob, by: str) -> str | None:
    if by == "suffix":
        return job.suffix
    if by == "base_model":
        return job.resolved_base_model or job.base_model
    if by == "job":
        return job.id
    if by.startswith("tag:"):
        return job.tag_dict.get(by.removeprefix("tag:"))
    raise LabmgrError(
        f"Cannot group curves by {by!r}.", hint="Use suffix, base_model, job or tag:KEY."
    )


def _jobs_by_group(
    db: Database, by: str, base_model: str | None, include_deleted: bool
) -> list[tuple[str, str]]:
    """(group, job id) of every final model's job, groups as `model_groups` forms them."""
    try:
        groups = model_groups(
            db, by=by, base_model=base_model, include_base=False, include_deleted=include_deleted
        )
    except DatabaseInputError as exc:
        raise LabmgrError(sentence(exc)) from None
    job_of = {
        model.name: model.job_id
        for model in select_models(db, base_model=base_model, include_deleted=include_deleted)
    }
    return [
        (group, job_id)
        for group, names in groups.items()
        for name in names
        if (job_id := job_of.get(name)) is not None
    ]


def training_curves(
    settings: Settings,
    jobs: Sequence[str] | None = None,
    *,
    by: str = "suffix",
    base_model: str | None = None,
    include_deleted: bool = False,
) -> pd.DataFrame:
    """The training curves of `jobs` (ids or short forms), or of every final model's job
    grouped `by` (``suffix``, ``base_model``, ``job``, ``tag:KEY``) as ``labmgr models
    groups`` groups them. One row per job and step; ``df.attrs["missing"]`` lists the jobs
    without curves yet; `NoCurves` when none has any."""
    import pandas as pd

    with lab_database(settings) as db:
        if jobs is not None:
            found = {job.id: job for job in (find_job(db, ref) for ref in jobs)}
            pairs = [(_group_of(job, by) or job.id, job.id) for job in found.values()]
            records: dict[str, FinetuneJob | None] = dict(found)
        else:
            pairs = _jobs_by_group(db, by, base_model, include_deleted)
            records = {job_id: get_job(db, job_id) for _, job_id in pairs}
        curves = job_curves(db, [job_id for _, job_id in pairs])
    missing = [job_id for _, job_id in pairs if job_id not in curves]
    if not curves:
        what = "these jobs" if jobs is not None else f"the models grouped by {by}"
        raise NoCurves(
            f"No training curves are stored for {what} "
            f"({len(pairs)} job(s); curves come with a job that succeeded).",
            hint="Run `labmgr jobs update` once the jobs have succeeded.",
        )
    frames = []
    for group, job_id in pairs:
        curve = curves.get(job_id)
        job = records.get(job_id)
        if curve is None or job is None:
            continue
        frame = pd.DataFrame(curve.rows, columns=curve.header, dtype="float64")
        frame["step"] = frame["step"].astype("int64")
        frame.insert(0, "group", group)
        frame.insert(1, "job_id", job_id)
        frame.insert(2, "model", job.fine_tuned_model)
        frame.insert(3, "suffix", job.suffix)
        frame.insert(4, "seed", job.seed if job.seed is not None else job.seed_requested)
        frames.append(frame)
    result = pd.concat(frames, ignore_index=True)
    metrics = [c for c in result.columns if c not in CURVE_COLUMNS]
    result = result[[*CURVE_COLUMNS, *metrics]]
    result.attrs["missing"] = missing
    return result


class ResultsFileError(ValueError):
    """The file is not a metrics CSV with a ``step`` column."""


def _text(data: bytes) -> str:
    stripped = data.strip()
    if not stripped.startswith(b"step"):
        try:
            decoded = base64.b64decode(stripped, validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        if decoded.strip().startswith(b"step"):
            stripped = decoded.strip()
    try:
        return stripped.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"not UTF-8 text (byte {exc.start})") from None


def _number(cell: str, line: int, column: str) -> float | None:
    cell = cell.strip()
    if not cell:
        return None
    try:
        value = float(cell)
    except ValueError:
        raise ResultsFileError(
            f"line {line}, column {column}: {cell[:20]!r} is not a number"
        ) from None
    return value if math.isfinite(value) else None


def parse_results_file(data: bytes) -> tuple[list[str], list[list[float | None]]]:
    """``(header, rows)`` of a results file; raises `ResultsFileError` saying what is wrong."""
    reader = csv.reader(io.StringIO(_text(data)))
    header = [name.strip() for name in next(reader, [])]
    if not header or header[0] != "step":
        shown = ",".join(header)[:40] if header else "nothing"
        raise ResultsFileError(f"the first column must be 'step' (the file starts with {shown!r})")
    rows: list[list[float | None]] = []
    for line, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise ResultsFileError(f"line {line} has {len(cells)} cells for {len(header)} columns")
        row = [_number(cell, line, name) for cell, name in zip(cells, header, strict=True)]
        if row[0] is None:
            raise ResultsFileError(f"line {line} has no step")
        rows.append(row)
    return header, rows
