"""`labmgr models capabilities [MODEL]`: what labmgr assumes a model accepts, and why."""

from __future__ import annotations

import json

import typer

from labmgr.cli.errors import cli_errors
from labmgr.cli.fitted_table import Column, print_fitted
from labmgr.cli.jobs_render import terminal
from labmgr.cli.state import cli_settings


@cli_errors
def capabilities(
    ctx: typer.Context,
    model: str | None = typer.Argument(
        None, help="A model id (a fine-tune takes its base's); none: the whole table."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    wide: bool = typer.Option(
        False, "--wide", help="Every column in full, however wide the terminal."
    ),
) -> None:
    """What labmgr assumes a model accepts (temperature, top_p, logprobs, the token limit's
    name, reasoning efforts, n) and where that came from: the built-in table (by family;
    fine-tunes take their base's) or the lab's [models] overrides in config.toml."""
    from labmgr.capabilities import capabilities_for, capability_table

    settings = cli_settings(ctx)
    found = (
        [capabilities_for(model, settings.models)]
        if model is not None
        else capability_table(settings.models)
    )
    if as_json:
        payload = [
            {"model": row.model, **row.capabilities.model_dump(), "source": row.source}
            for row in found
        ]
        typer.echo(json.dumps(payload[0] if model is not None else payload, indent=2))
        return
    console = terminal()
    if model is not None:
        row = found[0]
        described = {"model": row.model, **row.capabilities.describe(), "source": row.source}
        width = max(len(label) for label in described)
        for label, value in described.items():
            console.print(f"{label:{width}}  {value}", soft_wrap=True, highlight=False)
        return
    columns = [
        Column("model", 10),
        Column("temperature", 8),
        Column("logprobs", 7),
        Column("reasoning_effort", 6, _short_efforts),
        Column("token limit", 5, lambda cell: cell.removeprefix("max_")),
        Column("n", 4),
        Column("top_p", 3),
        Column("logit_bias", 2),
        Column("source", 1),
    ]
    cells = []
    for row in found:
        words = row.capabilities.describe()
        cells.append(
            [
                row.model,
                words["temperature"],
                words["logprobs"],
                words["reasoning_effort"],
                words["token_limit"],
                "yes" if row.capabilities.n else "no",
                words["top_p"],
                words["logit_bias"],
                "config" if row.override else "built-in",
            ]
        )
    print_fitted(console, columns, cells, wide=wide)


def _short_efforts(cell: str) -> str:
    """``minimal, low, medium, high (API default: medium)`` → ``minimal–high (medium)``."""
    efforts, _, default = cell.partition(" (API default: ")
    values = efforts.split(", ")
    span = f"{values[0]}–{values[-1]}" if len(values) > 2 else efforts
    return f"{span} ({default}" if default else span


def register(app: typer.Typer) -> None:
    """Add ``capabilities`` to ``labmgr models``."""
    app.command("capabilities", short_help="What labmgr assumes a model accepts, and where from.")(
        capabilities
    )
