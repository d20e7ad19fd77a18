"""The root typer application; the command modules import neither this one nor the
`labmgr.cli` face."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from labmgr import __version__
from labmgr.cli.cache import app as cache_app
from labmgr.cli.cache import batches
from labmgr.cli.demo import demo
from labmgr.cli.errors import CommandGroup
from labmgr.cli.eval import app as eval_app
from labmgr.cli.eval import report
from labmgr.cli.finetune import app as finetune_app
from labmgr.cli.jobs import app as jobs_app
from labmgr.cli.lab import db, info, init, keys
from labmgr.cli.labels import app as labels_app
from labmgr.cli.models import app as models_app
from labmgr.cli.sandbox import app as sandbox_app

app = CommandGroup(
    name="labmgr",
    help=(
        "Manage a fine-tuning lab: training files, OpenAI fine-tuning jobs, the models they "
        "produce, and cached evaluations that compare groups of models."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help for every command: typer's rich help shows a type after every flag
    # (`--json <bool>`) and reads help text as markup, eating bracketed text ([model, …]).
    rich_markup_mode=None,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"labmgr {__version__}")
        raise typer.Exit()


@app.callback()
def _root(  # `--home` is read where it is needed, by `cli_settings`
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_show_version,
        is_eager=True,
    ),
    home: Annotated[
        Path | None,
        typer.Option(
            metavar="<dir>",
            help="The lab folder to use (default: $LABMGR_HOME, else the nearest .labmgr/ "
            "upward from here, else the per-user lab).",
        ),
    ] = None,
) -> None:
    """labmgr: fine-tune many models, keep track of them, compare them."""


app.add_typer(sandbox_app, name="sandbox")
app.command("init", short_help="Create a lab folder (.labmgr/); never overwrites.")(init)
app.command("info", short_help="Show the lab in use, its database and endpoints.")(info)
app.command("keys", short_help="List API keys by env var name (never the key).")(keys)
app.add_typer(finetune_app, name="finetune")
app.add_typer(cache_app, name="cache")
app.add_typer(jobs_app, name="jobs")
app.add_typer(models_app, name="models")
app.add_typer(db, name="db")
app.add_typer(eval_app, name="eval")
app.add_typer(labels_app, name="labels")
app.add_typer(batches, name="batches")
app.command("report")(report)
app.command("demo")(demo)


def main() -> None:
    app()
