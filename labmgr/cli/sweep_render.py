"""How `labmgr finetune sweep` prints a plan (a table of jobs and factor levels) and the jobs
it created."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from labmgr.cli.fitted_table import Column, print_fitted
from labmgr.cli.jobs_render import id_shortener, terminal, when
from labmgr.finetuning.methods import LEVEL_TAGS

if TYPE_CHECKING:
    from jobs_db import FinetuneJob
    from labmgr.finetuning import SweepPlan

__all__ = ["print_created", "print_plan"]


def _money(dollars: float | None) -> str:
    if dollars is None:
        return "n/a"
    return f"${dollars:,.2f}" if dollars >= 0.01 else f"${dollars:.4f}"


def print_plan(plan: SweepPlan, *, wide: bool, dry_run: bool) -> None:
    """The sweep's jobs with their factor levels, which exist, and the cost of the new ones."""
    levels = sorted({name for job in plan.jobs for name in _levels(job.tags)})
    existing = [job.existing_job for job in plan.jobs if job.existing_job]
    shorten = id_shortener(existing)
    columns = [
        Column("condition", 9),
        Column("base", 6),
        Column("seed", 7, justify="right"),
        *(Column(name, 8, justify="right") for name in levels),
        Column("suffix", 4),
        Column("job", 10, shorten),
        Column("est. cost", 5, justify="right"),
    ]
    rows = []
    for job in plan.jobs:
        state = f"{job.existing_job} ({job.existing_status})" if job.existing_job else "new"
        rows.append(
            [
                job.condition,
                job.base_model,
                str(job.seed),
                *(job.tags.get(name, "") for name in levels),
                job.suffix,
                state,
                "" if job.existing_job else _money(job.estimated_cost),
            ]
        )
    console = terminal()
    print_fitted(console, columns, rows, title=f"Sweep {plan.name} ({plan.spec})", wide=wide)
    new = len(plan.new_jobs)
    cost = plan.estimated_cost
    cost_text = (
        f"estimated training cost {_money(cost)}"
        if cost is not None
        else "training cost not estimated (no per-token price; reinforcement is billed per hour)"
    )
    console.print(
        f"{len(plan.jobs)} job(s): {new} to create, {len(plan.jobs) - new} already in the lab; "
        f"{cost_text} (token counts estimated; auto epochs as the API would pick them).",
        soft_wrap=True,
    )
    if dry_run:
        console.print("Dry run: nothing was uploaded and no job was created.", soft_wrap=True)


def _levels(tags: dict[str, str]) -> list[str]:
    fixed = {"sweep", "condition", "seed", "base"}
    return [name for name in tags if name not in fixed and name in LEVEL_TAGS.values()]


def print_created(jobs: list[FinetuneJob]) -> None:
    """The jobs the sweep created now (queued ones with the time they can go)."""
    if not jobs:
        typer.echo("Nothing to create: the lab has every job of this sweep.")
        return
    queued = [job for job in jobs if job.status == "queued_locally"]
    typer.echo(f"Created {len(jobs) - len(queued)} job(s).")
    if queued:
        first = min((job.not_before for job in queued if job.not_before), default=None)
        typer.echo(
            f"The organization's daily job limit is reached: {len(queued)} job(s) queued "
            f"locally (files uploaded); `labmgr jobs update` sends them from {when(first)} UTC."
        )
