"""Shared pieces of the job and model commands: time format, JSON rows."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from jobs_db import FinetuneJob, Model


console = Console(highlight=False)


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
