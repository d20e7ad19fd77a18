"""`labmgr cache …`: inspect and clear the eval response cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from labmgr.cli.errors import cli_errors
from labmgr.cli.state import cli_settings

if TYPE_CHECKING:
    from evals.cache import Cache

app = typer.Typer(help="Inspect and clear the eval response cache.", no_args_is_help=True)

_DIR_OPTION = typer.Option(
    None, "--dir", help="Cache directory (default: the lab's cache directory)."
)


def _cache(ctx: typer.Context, directory: Path | None) -> Cache:
    """`--dir`, else the cache folder of this command's lab (`--home`, `LABMGR_HOME`, …)."""
    from evals.cache import Cache

    return Cache(directory if directory is not None else cli_settings(ctx).cache_dir)


@app.command("info")
@cli_errors
def info(
    ctx: typer.Context,
    directory: Path | None = _DIR_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Show what the cache holds, per question and model."""
    summary = _cache(ctx, directory).info()
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "path": str(summary.path),
                    "size_bytes": summary.size_bytes,
                    "samples": summary.samples,
                    "errors": summary.errors,
                    "packs": summary.packs,
                    "pack_bytes": summary.pack_bytes,
                    "entries": [e.__dict__ for e in summary.entries],
                },
                indent=2,
            )
        )
        return
    console = Console()
    console.print(
        f"{summary.path}: {summary.samples} cached samples, {summary.errors} recorded errors, "
        f"{summary.size_bytes / 1e6:.1f} MB"
    )
    if summary.packs:
        console.print(
            f"{summary.packs} packs ({summary.pack_bytes / 1e6:.1f} MB): copies of whole models' "
            "samples for fast reloads, rebuilt as needed"
        )
    if not summary.entries:
        return
    table = Table(show_header=True)
    for name in ("question", "model", "samples", "errors", "prompt tokens", "completion tokens"):
        table.add_column(name, justify="right" if name not in ("question", "model") else "left")
    for e in summary.entries:
        table.add_row(
            e.question,
            e.model,
            str(e.samples),
            str(e.errors),
            f"{e.prompt_tokens:.0f}",
            f"{e.completion_tokens:.0f}",
        )
    console.print(table)


@app.command("clear")
@cli_errors
def clear(
    ctx: typer.Context,
    question: str | None = typer.Option(
        None, "--question", help="Only this question (its judges' verdicts too)."
    ),
    model: str | None = typer.Option(None, "--model", help="Only this model."),
    directory: Path | None = _DIR_OPTION,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before clearing everything."),
    packs: bool = typer.Option(
        False,
        "--packs",
        help="Only drop the packs (copies kept for fast reloads); every answer stays.",
    ),
) -> None:
    """Delete cached answers: all of them, or those of a question and/or model."""
    cache = _cache(ctx, directory)
    if packs:
        if question is not None or model is not None:
            raise typer.BadParameter("--packs drops every pack; leave out --question and --model")
        typer.echo(f"dropped {cache.drop_packs()} packs; every cached answer is still there")
        return
    if question is None and model is None and not yes:
        typer.confirm(f"Delete every cached answer in {cache.directory}?", abort=True)
    deleted = cache.clear(question=question, model=model)
    what = " and ".join(
        part
        for part in (
            f"question '{question}'" if question else "",
            f"model '{model}'" if model else "",
        )
        if part
    )
    typer.echo(f"deleted {deleted} cached samples" + (f" of {what}" if what else ""))
