"""Turn a `LabmgrError` (or a jobs database error) into ``Error: <message>`` plus its hint
on stderr, and exit status 1."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from labmgr.errors import LabmgrError

P = ParamSpec("P")
R = TypeVar("R")


def print_error(error: LabmgrError) -> None:
    """Print `error` the way every command does (plain text, so lines never wrap)."""
    typer.echo(f"Error: {error.message}", err=True)
    if error.hint:
        typer.echo(error.hint, err=True)


def cli_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command so bad input ends in one clear message and exit status 1."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except LabmgrError as error:
            print_error(error)
            raise typer.Exit(1) from None
        except Exception as error:
            if not _is_database_error(error):
                raise
            print_error(LabmgrError(f"{error}."))
            raise typer.Exit(1) from None

    return wrapper


def _is_database_error(error: Exception) -> bool:
    """Whether `error` is a `jobs_db.DatabaseError` (a bad tag, an unreachable server, …).

    Read from `sys.modules` so commands that never open the database do not import it."""
    jobs_db = sys.modules.get("jobs_db")
    return jobs_db is not None and isinstance(error, jobs_db.DatabaseError)
