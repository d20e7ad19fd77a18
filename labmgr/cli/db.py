"""`labmgr db info` and `labmgr db upgrade`: the lab database's URL and schema revision."""

from __future__ import annotations

import typer

from labmgr.cli.errors import cli_errors
from labmgr.cli.jobs_render import console, print_json
from labmgr.cli.state import cli_settings
from labmgr.errors import LabNotFound

app = typer.Typer(
    help="The lab's jobs database: where it is, and its schema.", no_args_is_help=True
)


@app.command("info")
@cli_errors
def info(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print the database URL (password hidden) and its schema revision."""
    from jobs_db import current_revision, head_revision

    settings = cli_settings(ctx)
    data = {
        "db_url": settings.masked_db_url,
        "source": settings.db_url_source.value,
        "revision": current_revision(settings.db_url),
        "code_revision": head_revision(),
    }
    if as_json:
        print_json(data)
        return
    console.print(f"database   {data['db_url']} ({data['source']})")
    current = data["revision"] or "none (not created yet)"
    console.print(f"schema     {current}; this labmgr writes {data['code_revision']}")


@app.command("upgrade")
@cli_errors
def upgrade(ctx: typer.Context) -> None:
    """Create the database, or migrate it in place to this labmgr's schema."""
    from jobs_db import upgrade as upgrade_schema

    settings = cli_settings(ctx)
    if not settings.home.is_dir():
        raise LabNotFound(
            f"No lab found: {settings.home} does not exist.",
            hint="Run `labmgr init` first, or pass --home / set LABMGR_HOME.",
        )
    revision = upgrade_schema(settings.db_url)
    console.print(f"{settings.masked_db_url} is at schema revision {revision}.")
