"""`labmgr models …`: the lab's models listed, grouped for an eval, their training curves
overlaid, deleted; and what labmgr assumes each model accepts."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.fitted_table import Column, ItemColumns, print_fitted, print_items
from labmgr.cli.output import (
    BASE,
    CHECKPOINTS,
    DELETED,
    JSON,
    SUFFIX,
    TAGS,
    WIDE,
    cell,
    cli_settings,
    id_shortener,
    model_row,
    print_fields,
    print_json,
    short_model,
    terminal,
    when,
)
from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    from jobs_db import Model

app = CommandGroup(help="List and group the lab's fine-tuned models.", no_args_is_help=True)

_CSV_COLUMNS = (
    "name", "kind", "base_model", "suffix", "job_id", "step", "epoch", "job_status",
    "organization_id", "project_id", "created_at", "deleted_at",
)  # fmt: skip
_BY_METAVAR = "<suffix|base_model|job|tag:KEY>"


@app.command("list", short_help="List final models (and checkpoints), oldest first.")
def list_models(
    ctx: typer.Context,
    base: str | None = BASE,
    suffix: str | None = SUFFIX,
    tag: Annotated[list[str] | None, TAGS] = None,
    checkpoints: bool = CHECKPOINTS,
    only_checkpoints: bool = typer.Option(False, "--only-checkpoints", help="Checkpoints only."),
    include_deleted: bool = DELETED,
    wide: bool = WIDE,
    as_json: bool = JSON,
    as_csv: bool = typer.Option(False, "--csv", help="Print CSV."),
) -> None:
    """Final models (and checkpoints on request), oldest first (names shortened to fit)."""
    from labmgr.finetuning import lab_models

    if as_json and as_csv:
        raise LabmgrError("Choose one of --json and --csv.")
    models = lab_models(
        cli_settings(ctx),
        base_model=base,
        suffix=suffix,
        tags=tag or None,
        checkpoints="only" if only_checkpoints else checkpoints,
        include_deleted=include_deleted,
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
    shorten = id_shortener(model.job_id for model in models if model.job_id)
    columns: ItemColumns[Model] = [
        (Column("model", 10, short_model), lambda model: model.name),
        (Column("kind", 8), lambda model: model.kind + (" (deleted)" if model.deleted_at else "")),
        (Column("suffix", 7), lambda model: model.suffix or ""),
        (Column("step", 4, justify="right"), lambda model: cell(model.step)),
        (Column("epoch", 3, justify="right"), lambda model: cell(model.epoch)),
        (Column("job", 5, shorten), lambda model: model.job_id or ""),
        (Column("created", 2), lambda model: when(model.created_at)),
    ]
    print_items(terminal(), models, columns, title=f"{len(models)} model(s)", wide=wide)


@app.command("groups", short_help="Models grouped for an evaluation.")
def groups(
    ctx: typer.Context,
    by: str = typer.Option("suffix", metavar=_BY_METAVAR, help="What puts models in one group."),
    base: str | None = BASE,
    include_base: bool = typer.Option(
        True, "--include-base/--no-base", help="Add the base model as its own group."
    ),
    checkpoints: bool = CHECKPOINTS,
    include_deleted: bool = DELETED,
    as_json: bool = typer.Option(False, "--json", help="Print {group: [model, …]} as JSON."),
) -> None:
    """Models grouped for an evaluation, in a deterministic order (deleted models left out)."""
    from labmgr.finetuning import lab_model_groups

    found = lab_model_groups(
        cli_settings(ctx),
        by=by,
        base_model=base,
        include_base=include_base,
        checkpoints=checkpoints,
        include_deleted=include_deleted,
    )
    if as_json:
        print_json(found)
        return
    console = terminal()
    if not found:
        console.print("No models match.")
    for group, names in found.items():
        console.print(f"{group} ({len(names)})")
        for name in names:
            console.print(f"  {name}")


@app.command("curves", short_help="Overlay the training curves of each group's seeds.")
def curves(
    ctx: typer.Context,
    by: str = typer.Option("suffix", metavar=_BY_METAVAR, help="What puts models in one group."),
    base: str | None = BASE,
    include_deleted: bool = DELETED,
    out: Annotated[
        Path, typer.Option(metavar="<file>", help="Where to write the figure (.png/.pdf/.svg).")
    ] = Path("curves.png"),
    as_csv: bool = typer.Option(False, "--csv", help="Print the curves as CSV instead."),
) -> None:
    """Training curves of the final models' jobs, grouped as `models groups` groups them:
    one panel per metric, one colour per group, one line per seed."""
    from labmgr.finetuning import group_curves_figure, save_figure, training_curves

    frame = training_curves(
        cli_settings(ctx), by=by, base_model=base, include_deleted=include_deleted
    )
    if as_csv:
        frame.to_csv(sys.stdout, index=False)
        return
    groups = frame.groupby("group")["job_id"].nunique()
    title = f"Training curves by {by}" + (f" · {base}" if base else "")
    path = save_figure(group_curves_figure(frame, title), out)
    console = terminal()
    summary = ", ".join(f"{group} ({count})" for group, count in groups.items())
    console.print(f"Curves of {summary} written to {path}")
    missing = frame.attrs.get("missing") or []
    if missing:
        console.print(
            f"{len(missing)} job(s) have no curves yet (run `labmgr jobs update`): "
            + ", ".join(missing)
        )


@app.command("delete", short_help="Delete a fine-tuned model on the API; mark it deleted.")
def delete(
    ctx: typer.Context,
    model: Annotated[str, typer.Argument(help="The fine-tuned model (ft:…) or checkpoint.")],
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
) -> None:
    """Delete a fine-tuned model on the API (it answers no request afterwards) and mark it
    deleted in the database: it leaves `models list` and `models groups` unless asked for."""
    from labmgr.finetuning import delete_model

    if not yes and not typer.confirm(f"Delete {model} on the API? This cannot be undone"):
        raise typer.Exit(1)
    deleted = delete_model(model, settings=cli_settings(ctx))
    terminal().print(f"{deleted.name}: deleted ({when(deleted.deleted_at)} UTC)")


@app.command("capabilities", short_help="What labmgr assumes a model accepts, and where from.")
def capabilities(
    ctx: typer.Context,
    model: str | None = typer.Argument(
        None, help="A model id (a fine-tune takes its base's); none: the whole table."
    ),
    as_json: bool = JSON,
    wide: bool = WIDE,
) -> None:
    """What labmgr assumes a model accepts (temperature, top_p, logprobs, the token limit's
    name, reasoning efforts, n) and where that came from: the built-in table (by family;
    fine-tunes take their base's) or the lab's [models] overrides in config.toml."""
    from labmgr.capabilities import capabilities_for, capability_table

    settings = cli_settings(ctx)
    overrides = settings.models
    found = capability_table(overrides) if model is None else [capabilities_for(model, overrides)]
    if as_json:
        rows = [
            {"model": row.model, **row.capabilities.model_dump(), "source": row.source}
            for row in found
        ]
        print_json(rows[0] if model is not None else rows)
    elif model is not None:
        row = found[0]
        described = {"model": row.model, **row.capabilities.describe(), "source": row.source}
        print_fields(terminal(), described.items())
    else:
        columns = [
            Column("model", 10),
            Column("temperature", 8),
            Column("logprobs", 7),
            Column("reasoning_effort", 6, _short_efforts),
            Column("token_limit", 5, lambda cell: cell.removeprefix("max_")),
            Column("n", 4, lambda cell: cell.split(" ")[0]),
            Column("top_p", 3),
            Column("logit_bias", 2),
            Column("source", 1),
        ]
        cells = []
        for row in found:
            words = row.capabilities.describe()
            source = "config" if row.override else "built-in"
            cells.append([row.model, *(words[column.header] for column in columns[1:-1]), source])
        print_fitted(terminal(), columns, cells, wide=wide)


def _short_efforts(cell: str) -> str:
    """``minimal, low, medium, high (API default: medium)`` → ``minimal–high (medium)``."""
    efforts, _, default = cell.partition(" (API default: ")
    values = efforts.split(", ")
    span = f"{values[0]}–{values[-1]}" if len(values) > 2 else efforts
    return f"{span} ({default}" if default else span
