"""The root typer application; each command group lives in its own module."""

from __future__ import annotations

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
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_show_version,
        is_eager=True,
    ),
) -> None:
    """labmgr: fine-tune many models, keep track of them, compare them."""


def _register_commands() -> None:
    from labmgr.cli import cache, sandbox

    app.add_typer(sandbox.app, name="sandbox")
    app.add_typer(cache.app, name="cache")


_register_commands()


def main() -> None:
    """Entry point of the `labmgr` console script."""
    app()
