"""Shared pieces of the job and model commands: the console, time format, short ids, JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from jobs_db import FinetuneJob, Model

ELLIPSIS = "…"
"""Marks the middle left out of a shortened id (``ftjob-…a1b2``); `jobs show` accepts it."""
_MIN_TAIL = 4


def terminal() -> Console:
    """A console for this command's output, as wide as the terminal is now (``COLUMNS``).

    Text is printed as it is: no markup, no emoji codes, no highlighting (a suffix such as
    ``[v2]`` or ``:x:`` must reach the screen unchanged).
    """
    return Console(highlight=False, markup=False, emoji=False)


def when(value: datetime | None) -> str:
    """``2026-05-01 14:03`` in UTC, or an empty string."""
    return f"{value:%Y-%m-%d %H:%M}" if value else ""


def id_shortener(ids: Iterable[str]) -> Callable[[str], str]:
    """A function shortening each of `ids` to ``head…tail`` (``ftjob-…a1b2``).

    The head is everything up to the first ``-`` (``ftjob-``); the tail is the last four
    characters, or more where four would not tell two of `ids` apart. `labmgr jobs show`
    finds a job again from such a short id.
    """
    known = sorted(set(ids))
    tail = _MIN_TAIL
    while tail < max((len(i) for i in known), default=0):
        if len({(_head(i), i[-tail:]) for i in known}) == len(known):
            break
        tail += 1

    def shorten(job_id: str) -> str:
        head = _head(job_id)
        if len(head) + len(ELLIPSIS) + tail >= len(job_id):
            return job_id
        return f"{head}{ELLIPSIS}{job_id[-tail:]}"

    return shorten


def _head(job_id: str) -> str:
    dash = job_id.find("-")
    return job_id[: dash + 1] if 0 <= dash <= 10 else ""


def short_model(name: str) -> str:
    """A fine-tuned model id without its base and organization: ``ft:…:suffix:AbCd1234``
    (checkpoints keep ``:ckpt-step-N``); other names unchanged."""
    parts = name.split(":")
    if parts[0] != "ft" or len(parts) < 5:
        return name
    return ":".join(["ft", ELLIPSIS, *parts[3:]])


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
