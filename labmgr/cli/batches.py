"""`labmgr batches list | collect | cancel`: the Batch API batches of the lab's cache."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.fitted_table import Column, print_fitted
from labmgr.cli.output import JSON, cli_settings, print_json, terminal

if TYPE_CHECKING:
    from evals.runner import BatchState, RunContext

app = CommandGroup(
    help="Batches sent with `eval run --batch`: list, collect into the cache, cancel.",
    no_args_is_help=True,
)

_COLUMNS = [
    Column("batch", 7),
    Column("question", 5),
    Column("model", 6),
    Column("status", 8),
    Column("lines done", 4),
    Column("samples", 3, justify="right"),
    Column("created", 2),
]


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


def _print(title: str, states: list[BatchState], as_json: bool, empty: str) -> None:
    if as_json:
        print_json([_as_dict(state) for state in states])
        return
    if not states:
        terminal().print(empty)
        return
    rows = []
    for state in states:
        row = _as_dict(state)
        done = ""
        if state.completed is not None:
            done = f"{state.completed}/{state.record.requests}"
            done += f" ({state.failed} failed)" if state.failed else ""
        status = str(row["status"] or row["state"])
        if row["problem"]:
            status += f" — {row['problem']}"
        cells = [row["batch_id"] or "(submitting)", row["question"], row["model"], status, done]
        rows.append([*map(str, cells), str(row["samples"]), str(row["created"]).replace("T", " ")])
    print_fitted(terminal(), _COLUMNS, rows, title=title)


@app.command("list")
def list_command(
    ctx: typer.Context,
    show_all: bool = typer.Option(False, "--all", help="Also list batches already collected."),
    as_json: bool = JSON,
) -> None:
    """Show the batches in flight with their status from the API (--all: the past ones too)."""
    from evals.runner import list_batches

    states = list_batches(_context(ctx), active_only=not show_all, refresh=True)
    in_flight = "" if show_all else " in flight"
    _print(f"Batches{in_flight}", states, as_json, f"No batches{in_flight}.")


@app.command("collect")
def collect_command(
    ctx: typer.Context,
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait for running batches (default)."),
    as_json: bool = JSON,
) -> None:
    """Read every finished batch into the cache, waiting for the others (with a display of
    their states); the run that wants the samples then finds them cached."""
    from evals.runner import collect_batches

    outcome = collect_batches(_context(ctx), wait=wait)
    if as_json:
        counts = {name: getattr(outcome, name) for name in ("requests", "samples", "cost")}
        print_json({**counts, "errors": len(outcome.errors), "pending": outcome.pending})
        return
    console = terminal()
    console.print(
        f"Collected {outcome.samples} samples from {outcome.requests} batch lines "
        f"(${outcome.cost:.4f} at the batch price); {len(outcome.errors)} samples failed."
    )
    if outcome.pending:
        console.print(f"{outcome.pending} samples are in batches still running.")


@app.command("cancel")
def cancel_command(
    ctx: typer.Context,
    batch_ids: Annotated[
        list[str] | None, typer.Argument(help="Batch ids (default: every batch in flight).")
    ] = None,
    as_json: bool = JSON,
) -> None:
    """Cancel batches in flight. What they finished is collected later; running the same
    eval again sends the rest."""
    from evals.runner import cancel_batches

    states = cancel_batches(_context(ctx), batch_ids or None)
    _print("Cancelled", states, as_json, "No batches in flight.")
