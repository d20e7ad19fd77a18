"""The HTML report of a run (one self-contained offline file, figures embedded) and the run's
figures as files for a paper."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

from evals.errors import OutputError, why_not_writable
from evals.report._figures import (
    FigureFormat,
    FigureProblem,
    FigureSet,
    FigureStore,
    draw_figures,
    figure_digests,
    prepare_figure_folder,
    write_figures,
)
from evals.report._page import render_report
from evals.report._payload import safe_json
from evals.report._plans import FigurePlan, run_plans
from evals.runs import REPORT_FILE, Run, load_run

__all__ = [
    "FIGURES_DIR",
    "FigureFormat",
    "FigurePlan",
    "FigureProblem",
    "FigureSet",
    "FigureStore",
    "draw_figures",
    "figure_store_of",
    "prepare_figure_folder",
    "run_plans",
    "safe_json",
    "write_figures",
    "write_report",
]

FIGURES_DIR = "figures"
"""Beside the report: its embedded figures as PNG files, each with the digest of its input."""


def _target(run: Run, out: str | Path | None) -> Path:
    return Path(out) if out is not None else run.path / REPORT_FILE


def figure_store_of(
    run: Run, plans: list[FigurePlan], out: str | Path | None = None, shared: Path | None = None
) -> FigureStore:
    """The figures kept beside the report of `run` written to `out`, and in `shared` (a lab's
    `figures_dir`), so an unchanged figure is not drawn again."""
    return FigureStore(_target(run, out).parent / FIGURES_DIR, figure_digests(run, plans), shared)


def write_report(
    run: Run | str | Path, out: str | Path | None = None, *, figures: bool | FigureSet = True
) -> Path:
    """Write the report of `run` (a `Run` or its folder) to `out` (default: the folder's
    report.html) and return its path. `figures`: False leaves them out; a `FigureSet` drawn
    already is used as it is; figures drawn here are kept beside the report and reused while
    their input is unchanged. `OutputError` names `out` when it cannot be written there."""
    loaded = run if isinstance(run, Run) else load_run(run)
    target = _target(loaded, out)
    if target.is_dir():
        raise OutputError(
            f"cannot write the report to {target}: it is a folder.",
            hint="Give a file name, e.g. --out report.html.",
        )
    page = render_report(loaded, figures=figures, figure_store=target.parent / FIGURES_DIR)
    temporary = target.with_name(target.name + ".tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(page, encoding="utf-8")
        temporary.replace(target)
    except OSError as error:
        with suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise OutputError(
            f"cannot write the report to {target}: {why_not_writable(target, error)}.",
            hint="Give a path you can write to (its folders are created as needed).",
        ) from None
    return target
