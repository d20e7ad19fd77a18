"""The root typer application; each command group lives in its own module."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from labmgr import __version__

app = typer.Typer(
    name="labmgr",
    help=(
        "Manage a fine-tuning lab: training files, OpenAI fine-tuning jobs, the models they "
        "produce, and cached evaluations that compare groups of models."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"labmgr {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
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
            "--home",
            help="The lab folder to use (default: $LABMGR_HOME, else the nearest .labmgr/ "
            "upward from here, else the per-user lab).",
        ),
    ] = None,
) -> None:
    """labmgr: fine-tune many models, keep track of them, compare them."""
    from labmgr.cli.state import CliState

    ctx.obj = CliState(home=home)


def _register_commands() -> None:
    from labmgr.cli import cache, db, demo, finetune, jobs, lab, models, sandbox
    from labmgr.cli import eval as eval_cli
    from labmgr.cli import report as report_cli

    app.add_typer(sandbox.app, name="sandbox")
    lab.register(app)
    app.add_typer(finetune.app, name="finetune")
    app.add_typer(cache.app, name="cache")
    app.add_typer(jobs.app, name="jobs")
    app.add_typer(models.app, name="models")
    app.add_typer(db.app, name="db")
    app.add_typer(eval_cli.app, name="eval")
    report_cli.register(app)
    app.command("demo")(demo.demo)


_register_commands()


def main() -> None:
    """Entry point of the `labmgr` console script."""
    app()
