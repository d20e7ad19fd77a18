"""What the root command hands to every subcommand: the ``--home`` choice, and the lab it
names, resolved once per command."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import typer

from labmgr.settings import Settings, load_settings


@dataclass
class CliState:
    """Options of the root command, stored on the click context as ``ctx.obj``."""

    home: Path | None = None
    """The ``--home`` option, or None."""
    settings: Settings | None = field(default=None, repr=False)
    """The lab, once a command asked for it."""


def cli_state(ctx: typer.Context) -> CliState:
    """The root command's state (a default one when a command is invoked on its own)."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def cli_settings(ctx: typer.Context) -> Settings:
    """The lab of this command: ``--home``, then ``LABMGR_HOME``, then the nearest
    ``.labmgr/`` upward, then the per-user lab (`load_settings`), resolved once and then
    handed down; raises `LabmgrError` subclasses."""
    state = cli_state(ctx)
    if state.settings is None:
        state.settings = load_settings(state.home)
    return state.settings
