"""`import_labels`: a labelled file (or a label log of `labels serve`) read back into the run's
human_labels.csv; every bad row is one sentence, and a file with one imports nothing unless
`skip_bad`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from evals.errors import LabelsFileError, OutputError, describe_os_error
from evals.labels._export import candidates, restore
from evals.labels._log import latest_labels
from evals.questions import read_rows
from evals.runs import HUMAN_PREFIX, LABELS_FILE, SAMPLE_KEYS, Run, analyze_run, load_run

_EXPORTED = "Import the file `labmgr labels export` wrote, once its label columns are filled."


@dataclass
class LabelImport:
    """What `import_labels` did."""

    run: Run
    """The run read again (its agreement recomputed)."""
    rows: int
    labels: int
    """Labels imported (cells)."""
    skipped: list[str] = field(default_factory=list)
    """One sentence per bad row left out (with `skip_bad`)."""


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float | int) and not isinstance(value, bool):
        return repr(value)
    return restore(str(value)).strip()


def import_labels(
    run: Run | str | Path, file: str | Path, *, skip_bad: bool = False, report: bool | None = None
) -> LabelImport:
    """Read `file` (written by `export_labels`, labelled) into `run`: each labelled cell
    becomes the sample's `human_<score>` (replacing an earlier one); the report is written
    again when the run has one (or `report=True`)."""
    loaded = run if isinstance(run, Run) else load_run(run)
    path = Path(file)
    unreadable: list[str] = []
    try:
        as_csv = path.suffix.lower() not in (".jsonl", ".json")
        columns, rows = read_rows(path, as_csv=as_csv, bad=unreadable)
    except (OSError, UnicodeDecodeError) as error:
        reason = describe_os_error(error) if isinstance(error, OSError) else "not UTF-8 text"
        raise LabelsFileError(f"{path}: cannot read: {reason}", hint=_EXPORTED) from None
    except ValueError as error:  # not CSV, or empty
        raise LabelsFileError(str(error), hint=_EXPORTED) from None
    if "event" in columns:  # a label log of `labels serve`: its last event per answer
        rows = latest_labels(rows)
    if "id" not in columns and not unreadable:
        raise LabelsFileError(
            f"{path}: no 'id' column, so no row says which answer it labels", hint=_EXPORTED
        )
    found = candidates(loaded)
    known = found.score_names()
    label_columns = [c for c in columns if c.startswith(HUMAN_PREFIX)]
    for column in label_columns:
        if column.removeprefix(HUMAN_PREFIX) not in known:
            raise LabelsFileError(
                f"{path}: column {column!r} is not a score of the run "
                f"(its scores: {', '.join(known) or 'none'})",
                hint="Rename or remove the column: each label column is human_<score> for a "
                "score of the run, as `labmgr labels export` wrote it.",
            )
    by_id = found.table.set_index("id") if not found.table.empty else pd.DataFrame()
    seen: dict[str, int] = {}
    problems: list[str] = list(unreadable)
    imported: list[dict[str, Any]] = []
    for line, row in rows:
        sample = _cell(row.get("id"))
        wrong: list[str] = []
        if not sample:
            problems.append(f"{path}:{line}: no id")
            continue
        if sample not in by_id.index:
            problems.append(f"{path}:{line}: id {sample!r} is not a sample of this run")
            continue
        if sample in seen:
            problems.append(
                f"{path}:{line}: id {sample!r} is labelled again (first on line {seen[sample]})"
            )
            continue
        seen[sample] = line
        facts = by_id.loc[sample]
        question = str(facts["question"])
        labels: dict[str, float] = {}
        for column in label_columns:
            text = _cell(row.get(column))
            if not text:
                continue
            score = column.removeprefix(HUMAN_PREFIX)
            scale = found.scores[question].get(score)
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                wrong.append(f"{column} {text!r} is not a number")
            elif scale is None:
                wrong.append(f"{column}: question {question!r} has no score {score!r}")
            elif not scale.low <= value <= scale.high:
                wrong.append(f"{column} {text} is outside {scale.low:g} to {scale.high:g}")
            else:
                labels[column] = value
        if wrong:
            problems.append(f"{path}:{line}: id {sample!r}: " + "; ".join(wrong))
            continue
        if labels:
            imported.append(
                {
                    "id": sample,
                    **{key: facts[key] for key in SAMPLE_KEYS if key != "question"},
                    "question": question,
                    **labels,
                }
            )
    if problems and not skip_bad:
        raise LabelsFileError(
            f"{path}: {len(problems)} bad row{'s' if len(problems) != 1 else ''}, so nothing "
            "was imported:\n" + "\n".join(problems),
            problems=problems,
        )
    if not imported and not problems:
        raise LabelsFileError(
            f"{path}: no label in its {len(rows)} row{'s' if len(rows) != 1 else ''}, so "
            "nothing was imported",
            hint=f"Fill its {', '.join(label_columns) or 'human_<score>'} columns with numbers "
            "on each score's scale, then import it again.",
        )
    _store(loaded, imported)
    analyzed = analyze_run(load_run(loaded.path))
    if report if report is not None else (loaded.path / "report.html").is_file():
        from evals.report import write_report

        write_report(analyzed)
    cells = sum(len(r) - len(SAMPLE_KEYS) - 1 for r in imported)
    return LabelImport(analyzed, len(imported), cells, problems)


def _store(run: Run, imported: list[dict[str, Any]]) -> None:
    """Merge `imported` into human_labels.csv (a new label replaces the sample's old one)."""
    table = pd.DataFrame(imported)
    earlier = run.human_labels()
    if earlier is not None and not earlier.empty:
        if table.empty:
            table = earlier
        else:
            ids = list(dict.fromkeys([*earlier["id"], *table["id"]]))
            merged = table.set_index("id").combine_first(earlier.set_index("id"))
            table = merged.reindex(ids).rename_axis("id").reset_index()
    if table.empty:
        return
    order = ["id", *SAMPLE_KEYS]
    table = table[[*order, *[c for c in table.columns if c not in order]]]
    target = run.path / LABELS_FILE
    temporary = target.with_name(target.name + ".tmp")
    try:
        table.to_csv(temporary, index=False)
        temporary.replace(target)
    except OSError as error:
        raise OutputError(
            f"cannot write the labels {target}: {describe_os_error(error)}.",
            hint="Check the run folder's permissions, then import again.",
        ) from None
