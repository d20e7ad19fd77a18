"""`labmgr cache …` and `labmgr batches …`: inspect, clear and copy the eval response cache;
list, collect and cancel the Batch API batches it records."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.fitted_table import Column, plain_columns, print_fitted
from labmgr.cli.output import JSON, cli_settings, print_json, terminal

if TYPE_CHECKING:
    from evals.cache import Cache
    from evals.runner import BatchState, RunContext

app = CommandGroup(help="Inspect, clear and copy the eval response cache.", no_args_is_help=True)

_DIR_OPTION = typer.Option(None, "--dir", help="Cache directory (default: the lab's cache).")


def _cache(ctx: typer.Context, directory: Path | None) -> tuple[Cache, Path]:
    """`--dir`, else the lab's cache (its `cache_url`); and the figures folder beside it."""
    from evals.cache import Cache
    from labmgr.settings import FIGURES_DIR_NAME

    if directory is not None:
        return Cache(directory), directory / FIGURES_DIR_NAME
    lab = cli_settings(ctx)
    return Cache(lab.cache_url), lab.figures_dir


@app.command("info")
def info(
    ctx: typer.Context,
    directory: Path | None = _DIR_OPTION,
    as_json: bool = JSON,
) -> None:
    """Show what the cache holds, per question and model, and the figures kept for reports."""
    cache, figures = _cache(ctx, directory)
    summary = cache.info()
    try:
        sizes = [png.stat().st_size for png in figures.glob("*.png")]
    except OSError:
        sizes = []
    if as_json:
        figure_files = {"path": str(figures), "files": len(sizes), "bytes": sum(sizes)}
        print_json({**dataclasses.asdict(summary), "figures": figure_files})
        return
    console = terminal()
    console.print(f"cache: {summary.url}")
    console.print(
        f"{summary.samples} cached samples, {summary.errors} recorded errors, "
        f"{summary.size_bytes / 1e6:.1f} MB"
    )
    if summary.claims:
        console.print(
            f"{summary.claims} samples claimed by runs buying them now (a claim of a run that "
            "died ends with its lease)"
        )
    if sizes:
        console.print(
            f"{len(sizes)} figures ({sum(sizes) / 1e6:.1f} MB) in {figures}: kept for the "
            "lab's reports, drawn again when missing (safe to delete)"
        )
    if not summary.entries:
        return
    headers = ("question", "model", "samples", "errors", "prompt tokens", "completion tokens")
    rows = []
    for e in summary.entries:
        counts = (e.samples, e.errors, e.prompt_tokens, e.completion_tokens)
        rows.append([e.question, e.model, *(f"{n:.0f}" for n in counts)])
    print_fitted(console, plain_columns(*headers, right=headers[2:]), rows)


@app.command("clear")
def clear(
    ctx: typer.Context,
    question: str | None = typer.Option(None, help="Only this question (and its verdicts)."),
    model: str | None = typer.Option(None, help="Only this model."),
    directory: Path | None = _DIR_OPTION,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before clearing everything."),
) -> None:
    """Delete cached answers: all of them, or those of a question and/or model."""
    cache, _ = _cache(ctx, directory)
    if question is None and model is None and not yes:
        typer.confirm(f"Delete every cached answer in {cache.location}?", abort=True)
    deleted = cache.clear(question=question, model=model)
    parts = [f"question '{question}'" if question else "", f"model '{model}'" if model else ""]
    what = " and ".join(part for part in parts if part)
    typer.echo(f"deleted {deleted} cached samples" + (f" of {what}" if what else ""))


@app.command("copy")
def copy(
    ctx: typer.Context,
    to: str = typer.Option(
        ...,
        help="Where to copy the cache: a SQLAlchemy URL (postgresql+psycopg://user@host/db, "
        "sqlite:////path/responses.sqlite) or a folder.",
    ),
    directory: Path | None = _DIR_OPTION,
    as_json: bool = JSON,
) -> None:
    """Copy every cached answer and recorded error, and the batches in flight, into another
    cache (say a lab's shared PostgreSQL database). Safe to run again: what is there
    already is skipped, so an interrupted copy finishes and nothing is copied twice."""
    cache, _ = _cache(ctx, directory)
    result = cache.copy_to(to)
    if as_json:
        print_json(vars(result))
        return
    new, read = result.copied, result.read
    batches = f" (and {new['batches']} batches in flight)" if read["batches"] else ""
    typer.echo(
        f"copied {new['samples']} samples and {new['errors']} errors{batches} "
        f"from {result.source} to {result.target}"
    )
    skipped = sum(read.values()) - sum(new.values())
    if skipped:
        typer.echo(f"{skipped} rows were there already and were skipped")


batches = CommandGroup(
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


@batches.command("list")
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


@batches.command("collect")
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


@batches.command("cancel")
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
