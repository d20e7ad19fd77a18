"""`labmgr db info` and `labmgr db upgrade`: the lab database's URL and schema revision."""

from __future__ import annotations

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.output import JSON, cli_settings, print_fields, print_json, terminal

app = CommandGroup(help="The lab's jobs database: its location and schema.", no_args_is_help=True)

_STATE_TEXT = {
    "not created": "none yet (the first command that needs it creates it)",
    "empty file": "none: the file is empty (0 bytes); `labmgr db upgrade` starts a database in it",
    "current": "{revision}",
    "needs upgrade": "{revision} (the next command upgrades it to {code_revision})",
    "newer": "{revision}, newer than this labmgr knows (upgrade labmgr)",
}


@app.command("info", short_help="Print the database URL and its schema revision.")
def info(ctx: typer.Context, as_json: bool = JSON) -> None:
    """Print the database URL (password hidden) and its schema revision; changes nothing."""
    from labmgr.finetuning import lab_database_status

    status = lab_database_status(cli_settings(ctx))
    if as_json:
        print_json(status.model_dump(mode="json"))
        return
    schema = _STATE_TEXT[status.state].format(**status.model_dump())
    schema += f"; this labmgr writes {status.code_revision}"
    print_fields(
        terminal(), [("database", status.db_url), ("from", status.source), ("schema", schema)]
    )


@app.command("upgrade", short_help="Create the database, or migrate it in place.")
def upgrade(ctx: typer.Context) -> None:
    """Create the database, or migrate it in place to this labmgr's schema."""
    from labmgr.finetuning import upgrade_lab_database

    settings = cli_settings(ctx)
    revision = upgrade_lab_database(settings)
    terminal().print(f"{settings.masked_db_url} is at schema revision {revision}.")
