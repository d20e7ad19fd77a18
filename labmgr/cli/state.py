"""What the root command hands to every subcommand: the ``--home`` choice."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from labmgr.settings import Settings, load_settings


@dataclass
class CliState:
    """Options of the root command, stored on the click context as ``ctx.obj``."""

    home: Path | None = None
    """The ``--home`` option, or None."""


def cli_state(ctx: typer.Context) -> CliState:
    """The root command's state (a default one when a command is invoked on its own)."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def cli_settings(ctx: typer.Context) -> Settings:
    """`load_settings` honouring ``--home`` (raises `LabmgrError` subclasses)."""
    return load_settings(cli_state(ctx).home)
