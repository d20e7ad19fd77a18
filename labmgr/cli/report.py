"""`labmgr report RUN_DIR`: (re)write the self-contained HTML report of a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from labmgr.cli.errors import cli_errors


@cli_errors
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `labmgr eval run`.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Where to write (default: RUN_DIR/report.html).")
    ] = None,
    no_figures: Annotated[
        bool, typer.Option("--no-figures", help="Leave the figures out (faster for big runs).")
    ] = False,
) -> None:
    """Write one offline HTML file: summary, figures, a sample browser, side-by-side answers."""
    from evals.report import write_report

    path = write_report(run_dir, out, figures=not no_figures)
    typer.echo(f"Report: {path}")


def register(app: typer.Typer) -> None:
    """Add ``report`` to the root command."""
    app.command("report")(report)
