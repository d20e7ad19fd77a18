"""Shared pieces of the job and model commands: error handling, time format, JSON rows."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from labmgr.cli.errors import print_error
from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    from jobs_db import FinetuneJob, Model

P = ParamSpec("P")
R = TypeVar("R")

console = Console(highlight=False)


def job_cli_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Like `cli_errors`, and database input errors (a bad tag, …) end the same way."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from jobs_db import DatabaseError

        try:
            return command(*args, **kwargs)
        except LabmgrError as error:
            print_error(error)
            raise typer.Exit(1) from None
        except DatabaseError as error:
            print_error(LabmgrError(f"{error}."))
            raise typer.Exit(1) from None

    return wrapper


def when(value: datetime | None) -> str:
    """``2026-05-01 14:03`` in UTC, or an empty string."""
    return f"{value:%Y-%m-%d %H:%M}" if value else ""


def job_row(job: FinetuneJob) -> dict[str, Any]:
    """A job as a JSON object (tags included; no key, only the env var's name)."""
    data = job.model_dump(mode="json")
    data["tags"] = job.tag_dict
    return data


def model_row(model: Model) -> dict[str, Any]:
    """A model as a JSON object, with its job's status when known."""
    data = model.model_dump(mode="json")
    data["job_status"] = model.job.status if model.job is not None else None
    return data


def print_json(data: Any) -> None:
    """JSON on stdout for scripts."""
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))
