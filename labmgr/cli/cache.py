"""`labmgr cache …`: inspect, clear and copy the eval response cache."""

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

app = typer.Typer(help="Inspect, clear and copy the eval response cache.", no_args_is_help=True)

_DIR_OPTION = typer.Option(
    None,
    "--dir",
    help="Cache directory (default: the lab's cache, `cache_url` or its cache directory).",
)


def _cache(ctx: typer.Context, directory: Path | None) -> Cache:
    """`--dir`, else the cache of this command's lab (`--home`, `LABMGR_HOME`, …): its
    `cache_url` (`LABMGR_CACHE_URL`), by default the SQLite file in its cache folder."""
    from evals.cache import Cache

    if directory is not None:
        return Cache(directory)
    lab = cli_settings(ctx)
    return Cache(lab.cache_url)


def _figures(ctx: typer.Context, directory: Path | None) -> tuple[Path, int, int]:
    """The figures folder beside this cache (`--dir`, else the lab's), its PNG files and
    their bytes (0 and 0 when it is missing or unreadable)."""
    from labmgr.settings import FIGURES_DIR_NAME

    folder = (
        directory / FIGURES_DIR_NAME if directory is not None else cli_settings(ctx).figures_dir
    )
    try:
        sizes = [png.stat().st_size for png in folder.glob("*.png")]
    except OSError:
        sizes = []
    return folder, len(sizes), sum(sizes)


@app.command("info")
@cli_errors
def info(
    ctx: typer.Context,
    directory: Path | None = _DIR_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Show what the cache holds, per question and model, and the figures kept for reports."""
    summary = _cache(ctx, directory).info()
    figures, figure_files, figure_bytes = _figures(ctx, directory)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "url": summary.url,
                    "path": str(summary.path) if summary.path is not None else None,
                    "size_bytes": summary.size_bytes,
                    "samples": summary.samples,
                    "errors": summary.errors,
                    "packs": summary.packs,
                    "pack_bytes": summary.pack_bytes,
                    "claims": summary.claims,
                    "figures": {
                        "path": str(figures),
                        "files": figure_files,
                        "bytes": figure_bytes,
                    },
                    "entries": [e.__dict__ for e in summary.entries],
                },
                indent=2,
            )
        )
        return
    console = Console(highlight=False)
    console.print(f"cache: {summary.url}", soft_wrap=True)
    console.print(
        f"{summary.samples} cached samples, {summary.errors} recorded errors, "
        f"{summary.size_bytes / 1e6:.1f} MB"
    )
    if summary.claims:
        console.print(
            f"{summary.claims} samples claimed by runs buying them now (a claim of a run that "
            "died ends with its lease)"
        )
    if summary.packs:
        console.print(
            f"{summary.packs} packs ({summary.pack_bytes / 1e6:.1f} MB): copies of whole models' "
            "samples for fast reloads, rebuilt as needed"
        )
    if figure_files:
        console.print(
            f"{figure_files} figures ({figure_bytes / 1e6:.1f} MB) in {figures}: kept for the "
            "lab's reports, drawn again when missing (safe to delete)",
            soft_wrap=True,
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
        typer.confirm(f"Delete every cached answer in {cache.location}?", abort=True)
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


@app.command("copy")
@cli_errors
def copy(
    ctx: typer.Context,
    to: str = typer.Option(
        ...,
        "--to",
        help="Where to copy the cache: a SQLAlchemy URL (postgresql+psycopg://user@host/db, "
        "sqlite:////path/responses.sqlite) or a folder.",
    ),
    directory: Path | None = _DIR_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a sentence."),
) -> None:
    """Copy every cached answer, recorded error and pack, and the batches in flight, into
    another cache (say a lab's shared PostgreSQL database). Safe to run again: what is there
    already is skipped, so an interrupted copy finishes and nothing is copied twice."""
    source = _cache(ctx, directory)
    result = source.copy_to(to)
    if as_json:
        typer.echo(json.dumps(vars(result), indent=2))
        return
    new, read = result.copied, result.read
    batches = f" (and {new['batches']} batches in flight)" if read["batches"] else ""
    typer.echo(
        f"copied {new['samples']} samples, {new['errors']} errors and {new['packs']} packs"
        f"{batches} from {result.source} to {result.target}"
    )
    skipped = sum(read.values()) - sum(new.values())
    if skipped:
        typer.echo(f"{skipped} rows were there already and were skipped")
