"""`report_run`, the library twin of `labmgr report`: a run's report and figure files, its
statistics computed again first when asked; nothing is asked of any model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evals.runs import KEEP, Keep, Run, analyze_run, load_run
from evals.stats import Baseline, Method

if TYPE_CHECKING:  # matplotlib and seaborn are imported only when a report is written
    from evals.report import FigureFormat, FigureProblem


@dataclass
class ReportFiles:
    """What `report_run` wrote."""

    run: Run
    """The run as read after any recomputation (its summary and comparisons)."""
    report: Path | None
    figures: list[Path] = field(default_factory=list)
    problems: list[FigureProblem] = field(default_factory=list)
    """Figures that could not be drawn, each with the reason."""
    recomputed: bool = False
    """Whether the statistics were computed again from the samples."""
    embedded: int = 0
    """Figures in the report; of those, `reused` were read back from a store, not drawn."""
    reused: int = 0


def report_run(
    run: Run | str | Path,
    *,
    baseline: Baseline | Keep | None = KEEP,
    method: Method | None = None,
    out: str | Path | None = None,
    report: bool = True,
    figures: bool = True,
    figure_folder: str | Path | None = None,
    figure_format: FigureFormat = "pdf",
    by: list[str] | Keep = KEEP,
    shared_figures: Path | None = None,
) -> ReportFiles:
    """Write the report of `run` (to `out`, default its folder's report.html).

    With `baseline` (None: no comparisons), `method` or `by`, the statistics are first
    computed again (`analyze_run`). `figures=False` leaves the figures out of the report;
    `figure_folder` also writes every figure there as `<name>.<figure_format>`. With
    `shared_figures` (a lab's `figures_dir`), a figure whose input is unchanged is found
    there, whichever run drew it."""
    from evals.report import (
        draw_figures,
        figure_store_of,
        prepare_figure_folder,
        run_plans,
        write_report,
    )

    loaded = run if isinstance(run, Run) else load_run(run)
    folder = (
        prepare_figure_folder(figure_folder, figure_format) if figure_folder is not None else None
    )
    recompute = baseline is not KEEP or method is not None or by is not KEEP
    if recompute:
        loaded = analyze_run(loaded, baseline=baseline, method=method, by=by)
    embed = report and figures
    drawn = None
    if embed or folder is not None:
        plans = run_plans(loaded)
        # Figures for the page are kept beside it, and read back while their input is unchanged.
        store = figure_store_of(loaded, plans, out, shared=shared_figures) if embed else None
        drawn = draw_figures(
            plans, embed=embed, folder=folder, file_format=figure_format, store=store
        )
    path = None
    if report:
        path = write_report(loaded, out, figures=drawn if embed and drawn is not None else False)
    if drawn is None:
        return ReportFiles(loaded, path, recomputed=recompute)
    files, problems = list(drawn.files), list(drawn.problems)
    return ReportFiles(loaded, path, files, problems, recompute, len(drawn.embedded), drawn.reused)
