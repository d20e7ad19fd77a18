"""One error handler for every command: `LabmgrError`, `evals.errors.EvalsError`,
`jobs_db.DatabaseError` and any `OSError` (named by its file) end in ``Error: <message>`` (and
a hint) on stderr and exit status 1, never a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import typer
from typer.models import CommandFunctionType

from labmgr.errors import LabmgrError

P = ParamSpec("P")
R = TypeVar("R")


def as_user_error(error: Exception) -> LabmgrError | None:
    """`error` as a message and a hint, if a person could have caused it; else None.

    Evals' and the database's errors are looked up in `sys.modules`: a command that never
    imported them does not pay for importing them here."""
    if isinstance(error, LabmgrError):
        return error
    evals_errors = sys.modules.get("evals.errors")
    if evals_errors is not None and isinstance(error, evals_errors.EvalsError):
        return LabmgrError(error.message, hint=error.hint)
    jobs_db = sys.modules.get("jobs_db")
    if jobs_db is not None and isinstance(error, jobs_db.DatabaseError):
        return LabmgrError(f"{error}.")
    if not isinstance(error, OSError):
        return None
    reason = error.strerror or type(error).__name__
    if error.filename is None:
        return LabmgrError(f"{reason}: {error}.", hint="Check the path and its permissions.")
    where = str(error.filename) + ("" if error.filename2 is None else f" -> {error.filename2}")
    return LabmgrError(f"cannot use {where}: {reason}.", hint="Check the path and its permissions.")


def cli_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command so bad input ends in one clear message and exit status 1."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except Exception as error:
            user_error = as_user_error(error)
            if user_error is None:
                raise
            typer.echo(f"Error: {user_error.message}", err=True)
            if user_error.hint:
                typer.echo(user_error.hint, err=True)
            raise typer.Exit(1) from None

    return wrapper


class CommandGroup(typer.Typer):
    """A typer app whose every command is wrapped in `cli_errors`."""

    def command(
        self, *args: Any, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        register = super().command(*args, **kwargs)

        def wrap(function: CommandFunctionType) -> CommandFunctionType:
            register(cli_errors(function))
            return function

        return wrap
