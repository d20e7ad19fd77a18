"""`labmgr report RUN_DIR`: (re)write a run folder's HTML report, against another baseline if
asked (recomputed from the samples, no request), and its figures as files for a paper."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from labmgr.cli.output import BASELINE_HELP, CI_METHODS, check_choice, parse_baseline

if TYPE_CHECKING:
    from evals.report import FigureFormat
    from evals.stats import Method


def report(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `labmgr eval run`.")],
    out: Annotated[
        Path | None, typer.Option(help="Where to write (default: RUN_DIR/report.html).")
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            help=BASELINE_HELP + " summary.csv and comparisons.csv are computed again from the "
            "samples (no request is made).",
        ),
    ] = None,
    ci: str | None = typer.Option(
        None, help="Recompute the intervals: t, hierarchical or plain (default: the run's)."
    ),
    figures_dir: Annotated[
        Path | None,
        typer.Option("--figures", help="Also write every figure as a file into this folder."),
    ] = None,
    figure_format: str = typer.Option("pdf", "--format", help="Figure files: pdf, svg or png."),
    no_figures: bool = typer.Option(False, "--no-figures", help="Leave the figures out (faster)."),
    by: Annotated[
        list[str] | None,
        typer.Option(
            help="Split the summary, comparisons and figures by a grid factor's levels "
            "(recomputed from the samples).",
        ),
    ] = None,
) -> None:
    """Write one offline HTML file: the comparisons against the baseline, summary, figures, a
    sample browser, side-by-side answers."""
    from evals.experiments import report_run
    from evals.runs import KEEP

    check_choice(figure_format, "--format", ("pdf", "svg", "png"))
    check_choice(ci, "--ci", CI_METHODS)
    written = report_run(
        run_dir,
        baseline=parse_baseline(baseline) if baseline else KEEP,
        method=cast("Method | None", ci),
        out=out,
        figures=not no_figures,
        figure_folder=figures_dir,
        figure_format=cast("FigureFormat", figure_format),
        by=list(by) if by else KEEP,
    )
    if written.recomputed:
        typer.echo(f"Summary and comparisons recomputed from the samples in {written.run.path}")
    for problem in written.problems:
        typer.echo(f"Not drawn: {problem.message}")
    if figures_dir is not None:
        typer.echo(f"Figures: {len(written.figures)} {figure_format} files in {figures_dir}")
    typer.echo(f"Report: {written.report}")
