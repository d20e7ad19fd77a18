"""`labmgr sandbox …`: the offline OpenAI-compatible server."""

from __future__ import annotations

import typer

app = typer.Typer(help="Run the offline OpenAI-compatible sandbox server.", no_args_is_help=True)
