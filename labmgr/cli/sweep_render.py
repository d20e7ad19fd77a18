"""How `labmgr finetune sweep` prints its plan and the jobs it created."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from labmgr.cli.fitted_table import Column, print_fitted
from labmgr.cli.output import dollars, id_shortener, queued_note, terminal
from labmgr.finetuning.methods import LEVEL_TAGS

if TYPE_CHECKING:
    from jobs_db import FinetuneJob
    from labmgr.finetuning import SweepPlan

_FIXED_TAGS = {"sweep", "condition", "seed", "base"}


def print_plan(plan: SweepPlan, *, wide: bool, dry_run: bool) -> None:
    """The sweep's jobs with their factor levels, which exist, and the cost of the new ones."""
    levels = sorted(
        {
            name
            for job in plan.jobs
            for name in job.tags
            if name not in _FIXED_TAGS and name in LEVEL_TAGS.values()
        }
    )
    columns = [
        Column("condition", 9),
        Column("base", 6),
        Column("seed", 7, justify="right"),
        *(Column(name, 8, justify="right") for name in levels),
        Column("suffix", 4),
        Column("job", 10, id_shortener(job.existing_job for job in plan.jobs if job.existing_job)),
        Column("est. cost", 5, justify="right"),
    ]
    rows = [
        [
            job.condition,
            job.base_model,
            str(job.seed),
            *(job.tags.get(name, "") for name in levels),
            job.suffix,
            f"{job.existing_job} ({job.existing_status})" if job.existing_job else "new",
            "" if job.existing_job else dollars(job.estimated_cost),
        ]
        for job in plan.jobs
    ]
    console = terminal()
    print_fitted(console, columns, rows, title=f"Sweep {plan.name} ({plan.spec})", wide=wide)
    new = len(plan.new_jobs)
    cost = plan.estimated_cost
    cost_text = (
        f"estimated training cost {dollars(cost)}"
        if cost is not None
        else "training cost not estimated (no per-token price; reinforcement is billed per hour)"
    )
    console.print(
        f"{len(plan.jobs)} job(s): {new} to create, {len(plan.jobs) - new} already in the lab; "
        f"{cost_text} (token counts estimated; auto epochs as the API would pick them)."
    )
    if dry_run:
        console.print("Dry run: nothing was uploaded and no job was created.")


def print_created(jobs: list[FinetuneJob]) -> None:
    """The jobs the sweep created now (queued ones with the time they can go)."""
    if not jobs:
        typer.echo("Nothing to create: the lab has every job of this sweep.")
        return
    queued = sum(job.status == "queued_locally" for job in jobs)
    typer.echo(f"Created {len(jobs) - queued} job(s).")
    note = queued_note(jobs)
    if note:
        typer.echo(note)
