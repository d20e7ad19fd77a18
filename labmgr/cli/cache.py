"""`labmgr cache …`: inspect, clear and copy the eval response cache."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.fitted_table import Column, print_fitted
from labmgr.cli.output import JSON, cli_settings, print_json, terminal

if TYPE_CHECKING:
    from evals.cache import Cache

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
    columns = [
        Column("question", 6),
        Column("model", 5),
        Column("samples", 4, justify="right"),
        Column("errors", 3, justify="right"),
        Column("prompt tokens", 2, justify="right"),
        Column("completion tokens", 1, justify="right"),
    ]
    rows = []
    for e in summary.entries:
        counts = (e.samples, e.errors, e.prompt_tokens, e.completion_tokens)
        rows.append([e.question, e.model, *(f"{n:.0f}" for n in counts)])
    print_fitted(console, columns, rows)


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
