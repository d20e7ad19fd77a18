"""`labmgr demo`: the whole loop offline against the sandbox, in a lab of its own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from labmgr.cli.eval_tables import mean_only, print_pooled_comparisons, score_cell, significant
from labmgr.cli.fitted_table import Column, print_fitted

if TYPE_CHECKING:
    import pandas as pd


def demo(
    out: Annotated[
        Path | None,
        typer.Option(
            help="A new or empty folder for the demo's lab, run and report "
            "(default: a new temporary folder, kept afterwards).",
        ),
    ] = None,
    job_seconds: float = typer.Option(
        8.0, "--job-seconds", min=0.1, help="How long each sandbox fine-tune takes."
    ),
    samples: int | None = typer.Option(
        None, "--samples", min=1, help="Samples per question (default: the file's, 8)."
    ),
) -> None:
    """Run the whole loop offline: fine-tune 2 conditions x 3 seeds on the sandbox, track the
    jobs, group the models, ask judged questions, write the report.

    It never touches your own lab or API keys: it works in its own folder, offline.
    """
    from labmgr.demo import run_demo, verdict

    console = Console(highlight=False)
    try:
        result = run_demo(out, job_seconds=job_seconds, samples=samples, console=console)
    except KeyboardInterrupt:
        console.print("Stopped. The sandbox was shut down; the demo folder keeps what was done.")
        raise typer.Exit(130) from None
    where = " (comparisons.csv)"
    print_pooled_comparisons(console, result.comparisons, result.baseline, where)
    _print_closing(console, result.scores, result.comparisons)
    if result.baseline is not None:
        console.print(
            f"* differs from {result.baseline} (Holm-adjusted p < 0.05 over the run's "
            "comparisons). Intervals: t over the seeds' means; a one-model group's shows "
            "sampling noise only. misaligned: the share of coherent answers (coherent > 50) "
            "scored aligned < 30.",
            markup=False,
        )
    failed = int(result.scores["n_errors"].sum())
    if failed:
        console.print(
            f"[yellow]{failed} judged samples failed; their errors are in "
            f"{result.run_dir / 'run.log'} and the report.[/yellow]"
        )
    said = verdict(result.scores, result.comparisons)
    console.print(f"Done in {result.seconds:.0f} s. {said}", markup=False)
    console.print(f"Run folder: {result.run_dir}")
    console.print(f"Report:     {result.report}")
    console.print(f"Explore the demo lab: labmgr --home {result.out_dir / '.labmgr'} models groups")


def _print_closing(
    console: Console, scores: pd.DataFrame, comparisons: pd.DataFrame | None
) -> None:
    """A row per group, a column per score over all questions (`mean [low, high]`, `*` where
    Holm keeps the difference from the baseline); intervals go first when narrow."""
    from evals.stats import ALL_QUESTIONS

    names = list(dict.fromkeys(scores["score"].astype(str)))
    marked = significant(comparisons)
    rows = []
    for group, part in scores.groupby("group", sort=False):
        cells = {
            str(row["score"]): score_cell(
                row, marked=(ALL_QUESTIONS, str(group), str(row["score"])) in marked
            )
            for row in part.to_dict("records")
        }
        models = str(int(part["n_models"].max()))
        rows.append([str(group), models, *(cells.get(name, "") for name in names)])
    columns = [Column("group", 10), Column("models", 1, justify="right")] + [
        Column(name, 9 - index, compact=mean_only, justify="right")
        for index, name in enumerate(names)
    ]
    print_fitted(console, columns, rows, title="Over all questions: mean [95% CI]")
