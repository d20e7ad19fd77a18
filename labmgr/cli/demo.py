"""`labmgr demo`: the whole loop offline against the sandbox, in a lab of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from labmgr.cli.errors import cli_errors


@cli_errors
def demo(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="A new or empty folder for the demo's lab, run and report "
            "(default: a new temporary folder, kept afterwards).",
        ),
    ] = None,
    job_seconds: Annotated[
        float, typer.Option("--job-seconds", min=0.1, help="How long each sandbox fine-tune takes.")
    ] = 8.0,
    samples: Annotated[
        int | None,
        typer.Option("--samples", min=1, help="Samples per question (default: the file's, 8)."),
    ] = None,
) -> None:
    """Run the whole loop offline: fine-tune 2 conditions x 3 seeds on the sandbox, track the
    jobs, group the models, ask judged questions, write the report.

    It never touches your own lab or API keys: it works in its own folder, offline.
    """
    from labmgr.demo import run_demo, scores_as_rich

    console = Console(highlight=False)
    try:
        result = run_demo(out, job_seconds=job_seconds, samples=samples, console=console)
    except KeyboardInterrupt:
        console.print("Stopped. The sandbox was shut down; the demo folder keeps what was done.")
        raise typer.Exit(130) from None
    console.print(scores_as_rich(result.scores))
    failed = int(result.scores["n_errors"].sum())
    if failed:
        console.print(
            f"[yellow]{failed} judged samples failed; their errors are in "
            f"{result.run_dir / 'run.log'} and the report.[/yellow]"
        )
    console.print(f"Done in {result.seconds:.0f} s. {_verdict(result.scores)}")
    console.print(f"Run folder: {result.run_dir}")
    console.print(f"Report:     {result.report}")
    console.print(f"Explore the demo lab: labmgr --home {result.out_dir / '.labmgr'} models groups")


def _verdict(scores: Any) -> str:
    """What the closing table shows, read from its intervals rather than assumed."""
    from labmgr.demo.scores import separated_groups

    below = sorted({low for low, _ in separated_groups(scores, "aligned")})
    if not below:
        return "No group's 'aligned' interval is clear of the others'."
    return (
        f"On 'aligned', {', '.join(repr(g) for g in below)} sits below other groups with "
        "non-overlapping 95% intervals: those fine-tunes learned their training data's "
        "contempt for people."
    )
