"""`labmgr init`, `info`, `keys` and `db`: the lab folder, its settings, its API keys and its
jobs database."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.fitted_table import Column, ItemColumns, print_items
from labmgr.cli.output import JSON, WIDE, cli_settings, print_fields, print_json, terminal
from labmgr.errors import CredentialCheckFailed, MissingApiKey
from labmgr.settings import init_lab


def init(
    directory: Annotated[
        Path, typer.Argument(help="Where to create the .labmgr/ folder (default: here).")
    ] = Path("."),
) -> None:
    """Create a lab folder (.labmgr/ with config.toml, cache/, runs/); never overwrites."""
    result = init_lab(directory)
    for path in result.created:
        typer.echo(f"created  {path}")
    for path in result.existing:
        typer.echo(f"exists   {path}")
    typer.echo(f"Lab ready at {result.home}. Edit {result.home / 'config.toml'} to configure it.")


def info(ctx: typer.Context, as_json: bool = JSON) -> None:
    """Show which lab is in use and how it was found, its database, folders, endpoints and
    which endpoint serves which models."""
    from labmgr.accounts import summarize_endpoints  # the SDK is slow to import
    from labmgr.routing import routing_rules

    settings = cli_settings(ctx)
    data: dict[str, Any] = {
        "lab": str(settings.home),
        "found_by": settings.found_by.value,
        "config_file": str(settings.config_path),
        "config_exists": settings.config_path.is_file(),
        "db_url": settings.masked_db_url,
        "db_url_source": settings.db_url_source.value,
        "cache_dir": str(settings.cache_dir),
        "runs_dir": str(settings.runs_dir),
        "endpoints": [dataclasses.asdict(endpoint) for endpoint in summarize_endpoints(settings)],
        "routing": [dataclasses.asdict(rule) for rule in routing_rules(settings)],
        "api": settings.api.model_dump(),
        "eval": settings.eval.model_dump(),
        "price_overrides": sorted(settings.prices),
        "capability_overrides": list(settings.models),
    }
    if as_json:
        print_json(data)
        return
    rows = [
        ("Lab", data["lab"]),
        ("Found by", data["found_by"]),
        ("Config", data["config_file"] + ("" if data["config_exists"] else " (missing)")),
        ("Database", data["db_url"]),
        ("Database from", data["db_url_source"]),
        ("Cache", data["cache_dir"]),
        ("Runs", data["runs_dir"]),
    ]
    for endpoint in data["endpoints"]:
        keys = ", ".join(endpoint["key_envs"]) or "no key set"
        if endpoint["unset_key_env"]:
            keys = f"{endpoint['unset_key_env']} is not set"
        rows += [(f"Endpoint {endpoint['name']}", endpoint["base_url"]), ("  keys", keys)]
        if endpoint["models"]:
            rows.append(("  models", ", ".join(endpoint["models"])))
    for number, rule in enumerate(data["routing"], start=1):
        rows.append(
            ("Routing" if number == 1 else "", f"{number}. {rule['models']} → {rule['served_by']}")
        )
    defaults = settings.eval
    retries = f"request_timeout={defaults.request_timeout}s max_retries={defaults.max_retries}"
    rows.append(("Eval defaults", f"max_concurrency={defaults.max_concurrency} {retries}"))
    if data["price_overrides"]:
        rows.append(("Price overrides", ", ".join(data["price_overrides"])))
    if data["capability_overrides"]:
        rows.append(("Capability overrides", ", ".join(data["capability_overrides"])))
    print_fields(terminal(), rows)


def keys(
    ctx: typer.Context,
    as_json: bool = JSON,
    resolve: bool = typer.Option(
        True,
        "--resolve/--no-resolve",
        help="Look up organization/project of keys not yet cached (one request per key).",
    ),
    refresh: bool = typer.Option(False, "--refresh", help="Look up every key again (no cache)."),
    wide: bool = WIDE,
) -> None:
    """List API keys by env var name with endpoint, organization and project (never the key),
    and which endpoint serves which models."""
    from labmgr.accounts import Accounts, unset_endpoint_keys  # the SDK is slow to import
    from labmgr.routing import routing_rules

    settings = cli_settings(ctx)
    accounts = Accounts(settings)
    statuses = accounts.check_all(refresh=refresh, network=resolve)
    unset = unset_endpoint_keys(settings)
    if not statuses:
        raise MissingApiKey(
            "No API keys found in the environment.",
            hint="Set OPENAI_API_KEY (or OPENAI_API_KEY_<NAME> for several projects), "
            "OPENROUTER_API_KEY, or the key_env of an [endpoints.NAME] in "
            f"{settings.config_path}.",
        )
    rows: list[dict[str, Any]] = [
        {
            "key_env": s.credential.key_env,
            "endpoint": s.credential.endpoint,
            "base_url": s.credential.base_url,
            "organization": s.credential.organization,
            "project": s.credential.project,
            "resolved": s.credential.resolved,
            "cached": s.cached,
            "error": s.error,
            "models": list(getattr(settings.endpoints.get(s.credential.endpoint), "models", [])),
        }
        for s in statuses
    ]
    if as_json:
        print_json(rows)
    else:
        checked = "checked" if resolve else "not checked"
        columns: ItemColumns[dict[str, Any]] = [
            (Column("Env var", 10), lambda row: row["key_env"]),
            (Column("Endpoint", 5), lambda row: row["endpoint"]),
            (Column("Base URL", 6), lambda row: row["base_url"]),
            (Column("Organization", 8), lambda row: row["organization"] or "-"),
            (Column("Project", 7), lambda row: row["project"] or "-"),
            (
                Column("Status", 9),
                lambda row: (
                    "error (below)" if row["error"] else "cached" if row["cached"] else checked
                ),
            ),
        ]
        console = terminal()
        print_items(console, rows, columns, wide=wide)
        console.print("Routing, first match first:")
        for number, rule in enumerate(routing_rules(settings), start=1):
            console.print(f"  {number}. {rule.models} → {rule.served_by}")
    for endpoint, env_name in unset.items():
        typer.echo(f"Note: endpoint {endpoint!r} expects its key in {env_name}, which is unset.")
    failed = [s for s in statuses if s.error]
    if failed:
        reasons = "; ".join((s.error or "").rstrip(".") for s in failed)
        raise CredentialCheckFailed(
            f"{len(failed)} of {len(statuses)} keys could not be checked: {reasons}.",
            hint="Fix or unset those variables; `labmgr keys --no-resolve` skips the network.",
        )


db = CommandGroup(help="The lab's jobs database: its location and schema.", no_args_is_help=True)

_STATE_TEXT = {
    "not created": "none yet (the first command that needs it creates it)",
    "empty file": "none: the file is empty (0 bytes); `labmgr db upgrade` starts a database in it",
    "current": "{revision}",
    "needs upgrade": "{revision} (the next command upgrades it to {code_revision})",
    "newer": "{revision}, newer than this labmgr knows (upgrade labmgr)",
}


@db.command("info", short_help="Print the database URL and its schema revision.")
def db_info(ctx: typer.Context, as_json: bool = JSON) -> None:
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


@db.command("upgrade", short_help="Create the database, or migrate it in place.")
def db_upgrade(ctx: typer.Context) -> None:
    """Create the database, or migrate it in place to this labmgr's schema."""
    from labmgr.finetuning import upgrade_lab_database

    settings = cli_settings(ctx)
    revision = upgrade_lab_database(settings)
    terminal().print(f"{settings.masked_db_url} is at schema revision {revision}.")
