"""The root command's ``--home`` choice, and the lab it names, resolved once per command."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import typer

from labmgr.settings import Settings, load_settings


@dataclass
class CliState:
    """The root command's options (``ctx.obj``), and the lab once a command asked for it."""

    home: Path | None = None
    settings: Settings | None = field(default=None, repr=False)


def cli_settings(ctx: typer.Context) -> Settings:
    """The lab of this command (`load_settings` of ``--home``), resolved once."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):  # a command invoked on its own
        root.obj = CliState()
    state = root.obj
    if state.settings is None:
        state.settings = load_settings(state.home)
    return state.settings
