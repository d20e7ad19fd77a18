"""`labmgr batches list | collect | cancel`: the Batch API batches of the lab's cache."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from labmgr.cli.errors import cli_errors
from labmgr.cli.state import cli_settings

if TYPE_CHECKING:
    from evals.runner import BatchState, RunContext

app = typer.Typer(
    help="Batches sent with `eval run --batch`: list, collect into the cache, cancel.",
    no_args_is_help=True,
)
console = Console(highlight=False)

_JSON = typer.Option("--json", help="Print JSON instead of a table.")


def _context(ctx: typer.Context) -> RunContext:
    from evals.runner import run_context

    return run_context(lab=cli_settings(ctx))


def _as_dict(state: BatchState) -> dict[str, object]:
    record = state.record
    return {
        "batch_id": record.batch_id,
        "record": record.id,
        "question": record.label,
        "model": record.model,
        "endpoint": record.base_url,
        "state": record.state,
        "status": state.status,
        "requests": record.requests,
        "samples": record.samples,
        "completed": state.completed,
        "failed": state.failed,
        "created": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="seconds"),
        "problem": state.problem or record.message,
    }


def _table(title: str, states: list[BatchState]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("batch", "question", "model", "status", "lines done", "samples", "created"):
        table.add_column(column, justify="right" if column in ("samples",) else "left")
    for state in states:
        row = _as_dict(state)
        done = (
            ""
            if state.completed is None
            else f"{state.completed}/{state.record.requests}"
            + (f" ({state.failed} failed)" if state.failed else "")
        )
        status = str(row["status"] or row["state"])
        if row["problem"]:
            status += f" — {row['problem']}"
        cells = [
            str(row["batch_id"] or "(submitting)"),
            str(row["question"]),
            str(row["model"]),
            status,
            done,
            str(row["samples"]),
            str(row["created"]).replace("T", " "),
        ]
        table.add_row(*(Text(cell) for cell in cells))  # names are shown, never read as markup
    return table


@app.command("list")
@cli_errors
def list_command(
    ctx: typer.Context,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list batches already collected.")
    ] = False,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Show the batches in flight with their status from the API (--all: the past ones too)."""
    from evals.runner import list_batches

    states = list_batches(_context(ctx), active_only=not show_all, refresh=True)
    if as_json:
        typer.echo(json.dumps([_as_dict(state) for state in states], indent=2))
        return
    if not states:
        console.print("No batches in flight." if not show_all else "No batches.")
        return
    console.print(_table("Batches" if show_all else "Batches in flight", states))


@app.command("collect")
@cli_errors
def collect_command(
    ctx: typer.Context,
    wait: Annotated[
        bool,
        typer.Option("--wait/--no-wait", help="Wait for batches still running (the default)."),
    ] = True,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Read every finished batch into the cache, waiting for the others (with a display of
    their states); the run that wants the samples then finds them cached."""
    from evals.runner import collect_batches

    outcome = collect_batches(_context(ctx), wait=wait)
    summary = {
        "requests": outcome.requests,
        "samples": outcome.samples,
        "cost": outcome.cost,
        "errors": len(outcome.errors),
        "pending": outcome.pending,
    }
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    console.print(
        f"Collected {outcome.samples} samples from {outcome.requests} batch lines "
        f"(${outcome.cost:.4f} at the batch price); {len(outcome.errors)} samples failed."
    )
    if outcome.pending:
        console.print(f"{outcome.pending} samples are in batches still running.")


@app.command("cancel")
@cli_errors
def cancel_command(
    ctx: typer.Context,
    batch_ids: Annotated[
        list[str] | None, typer.Argument(help="Batch ids (default: every batch in flight).")
    ] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Cancel batches in flight. What they finished is collected later; running the same
    eval again sends the rest."""
    from evals.runner import cancel_batches

    states = cancel_batches(_context(ctx), batch_ids or None)
    if as_json:
        typer.echo(json.dumps([_as_dict(state) for state in states], indent=2))
        return
    if not states:
        console.print("No batches in flight.")
        return
    console.print(_table("Cancelled", states))
