"""`labmgr models …`: the models the lab's jobs produced, listed or grouped for an eval."""

from __future__ import annotations

import csv
import sys
from typing import Annotated

import typer
from rich.table import Table

from labmgr.cli.errors import cli_errors
from labmgr.cli.jobs_render import console, model_row, print_json, when
from labmgr.cli.state import cli_settings
from labmgr.errors import LabmgrError

app = typer.Typer(help="List and group the lab's fine-tuned models.", no_args_is_help=True)

_CSV_COLUMNS = (
    "name", "kind", "base_model", "suffix", "job_id", "step", "epoch", "job_status",
    "organization_id", "project_id", "created_at",
)  # fmt: skip


def _checkpoints_choice(checkpoints: bool, only: bool) -> bool | str:
    return "only" if only else checkpoints


@app.command("list")
@cli_errors
def list_models(
    ctx: typer.Context,
    base: str | None = typer.Option(None, "--base", help="Only models of this base model."),
    suffix: str | None = typer.Option(None, "--suffix", help="Suffix or glob (insecure-*)."),
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="key=value their job must have.")
    ] = None,
    checkpoints: bool = typer.Option(False, "--checkpoints", help="Include checkpoints."),
    only_checkpoints: bool = typer.Option(False, "--only-checkpoints", help="Checkpoints only."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    as_csv: bool = typer.Option(False, "--csv", help="Print CSV."),
) -> None:
    """Final models (and checkpoints on request), oldest first."""
    from jobs_db import select_models
    from labmgr.finetuning import lab_database

    if as_json and as_csv:
        raise LabmgrError("Choose one of --json and --csv.")
    with lab_database(cli_settings(ctx)) as db:
        models = select_models(
            db,
            base_model=base,
            suffix=suffix,
            tags=tag or None,
            checkpoints=_checkpoints_choice(checkpoints, only_checkpoints),  # type: ignore[arg-type]
        )
    rows = [model_row(model) for model in models]
    if as_json:
        print_json(rows)
        return
    if as_csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=_CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        return
    table = Table(title=f"{len(models)} model(s)", title_justify="left")
    for column in ("model", "kind", "suffix", "step", "epoch", "job", "created"):
        table.add_column(column, overflow="fold")
    for model in models:
        table.add_row(
            model.name,
            model.kind,
            model.suffix or "",
            "" if model.step is None else str(model.step),
            "" if model.epoch is None else str(model.epoch),
            model.job_id or "",
            when(model.created_at),
        )
    console.print(table)


@app.command("groups")
@cli_errors
def groups(
    ctx: typer.Context,
    by: str = typer.Option("suffix", "--by", help="suffix, base_model, job or tag:KEY."),
    base: str | None = typer.Option(None, "--base", help="Only models of this base model."),
    include_base: bool = typer.Option(
        True, "--include-base/--no-base", help="Add the base model as its own group."
    ),
    checkpoints: bool = typer.Option(False, "--checkpoints", help="Include checkpoints."),
    as_json: bool = typer.Option(False, "--json", help="Print {group: [model, …]} as JSON."),
) -> None:
    """Models grouped for an evaluation, in a deterministic order."""
    from jobs_db import model_groups
    from labmgr.finetuning import lab_database

    with lab_database(cli_settings(ctx)) as db:
        found = model_groups(
            db, by=by, base_model=base, include_base=include_base, checkpoints=checkpoints
        )
    if as_json:
        print_json(found)
        return
    if not found:
        console.print("No models match.")
    for group, names in found.items():
        console.print(f"{group} ({len(names)})")
        for name in names:
            console.print(f"  {name}")
