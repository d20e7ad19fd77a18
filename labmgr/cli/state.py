"""The lab of a command: the root's ``--home`` choice, resolved once per command."""

from __future__ import annotations

import typer

from labmgr.settings import Settings, load_settings


def cli_settings(ctx: typer.Context) -> Settings:
    """The lab of this command: `load_settings` of the root's ``--home``, resolved once."""
    root = ctx.find_root()
    if "settings" not in root.meta:
        root.meta["settings"] = load_settings(root.params.get("home"))
    settings: Settings = root.meta["settings"]
    return settings
