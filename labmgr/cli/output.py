"""What the commands share: the lab, the console, times, money, intervals, short ids, fields,
JSON, and the options several of them take."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from labmgr.errors import LabmgrError
from labmgr.settings import Settings, load_settings

if TYPE_CHECKING:
    import pandas as pd

    from jobs_db import FinetuneJob, Model

ELLIPSIS = "…"
"""Marks the middle left out of a shortened id (``ftjob-…a1b2``); `jobs show` accepts it."""


def cli_settings(ctx: typer.Context) -> Settings:
    """The lab of this command: `load_settings` of the root's ``--home``, resolved once."""
    root = ctx.find_root()
    if "settings" not in root.meta:
        root.meta["settings"] = load_settings(root.params.get("home"))
    settings: Settings = root.meta["settings"]
    return settings


def terminal() -> Console:
    """A console as wide as the terminal that prints text as it is: no markup, no emoji, and
    long lines left to the terminal to wrap."""
    return Console(highlight=False, markup=False, emoji=False, soft_wrap=True)


def when(value: datetime | None) -> str:
    """``2026-05-01 14:03`` in UTC, or an empty string."""
    return f"{value:%Y-%m-%d %H:%M}" if value else ""


def cell(value: object, form: str = "{}") -> str:
    """`value` formatted for a table cell, or an empty string for None."""
    return "" if value is None else form.format(value)


def interval(value: float, low: float, high: float, form: str = ".2f", empty: str = "") -> str:
    """``0.42 (0.31 – 0.55)``, or `empty` when `value` is NaN."""
    if math.isnan(value):
        return empty
    return f"{value:{form}} ({low:.2f} – {high:.2f})"


def dollars(value: float | None) -> str:
    """``$1,234.56``, ``$0.0012`` below a cent, ``n/a`` when unknown."""
    if value is None:
        return "n/a"
    return f"${value:,.2f}" if value >= 0.01 else f"${value:.4f}"


def id_shortener(ids: Iterable[str]) -> Callable[[str], str]:
    """A function shortening each of `ids` to ``head…tail`` (``ftjob-…a1b2``): the head runs
    to the first ``-``, the tail is the last four characters, more where needed to tell two
    of `ids` apart."""
    known = sorted(set(ids))
    tail = 4
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
    """A fine-tuned model id without its base and organization (``ft:…:suffix:AbCd1234``)."""
    parts = name.split(":")
    if parts[0] != "ft" or len(parts) < 5:
        return name
    return ":".join(["ft", ELLIPSIS, *parts[3:]])


def print_queued_note(jobs: Iterable[FinetuneJob]) -> None:
    """Say which of `jobs` the daily limit queued locally, and from when they can go."""
    queued = [job for job in jobs if job.status == "queued_locally"]
    if queued:
        first = min((job.not_before for job in queued if job.not_before), default=None)
        typer.echo(
            f"The organization's daily job limit is reached: {len(queued)} job(s) queued "
            f"locally (files uploaded); `labmgr jobs update` sends them from {when(first)} UTC."
        )


def job_row(job: FinetuneJob) -> dict[str, Any]:
    """A job as a JSON object, with its tags."""
    return {**job.model_dump(mode="json"), "tags": job.tag_dict}


def model_row(model: Model) -> dict[str, Any]:
    """A model as a JSON object, with its job's status when known."""
    status = model.job.status if model.job is not None else None
    return {**model.model_dump(mode="json"), "job_status": status}


def print_fields(console: Console, fields: Iterable[tuple[str, object]]) -> None:
    """``label  value`` lines, the values aligned."""
    pairs = [(label, str(value)) for label, value in fields]
    width = max((len(label) for label, _ in pairs), default=0)
    for label, value in pairs:
        console.print(f"{label:{width}}  {value}")


def print_json(data: Any) -> None:
    """JSON on stdout for scripts."""
    typer.echo(json.dumps(data, indent=2, default=str))


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (NaN becomes null)."""
    cleaned = frame.astype(object).where(frame.notna(), None)
    return [{str(k): v for k, v in row.items()} for row in cleaned.to_dict(orient="records")]


def check_choice(value: str | None, option: str, choices: tuple[str, ...]) -> None:
    """Refuse `value` of `option` unless it is None or one of `choices`."""
    if value is not None and value not in choices:
        raise LabmgrError(f"{option} {value!r}: use one of {', '.join(choices)}")


def parse_baseline(values: list[str] | None) -> str | dict[str, str] | None:
    """`--baseline` values: one GROUP that every group is compared with, or GROUP=BASELINE
    (repeated) for each group compared with its own."""
    if not values:
        return None
    pairs = [value.split("=", 1) for value in values if "=" in value]
    if not pairs:
        if len(values) > 1:
            raise LabmgrError(
                f"--baseline {values[1]!r}: give one GROUP, or GROUP=BASELINE for each group "
                "compared with its own baseline"
            )
        return values[0]
    if len(pairs) < len(values):
        lone = next(value for value in values if "=" not in value)
        raise LabmgrError(f"--baseline {lone!r}: with GROUP=BASELINE pairs, write every one so")
    return {group.strip(): base.strip() for group, base in pairs}


BASELINE_HELP = (
    "Compare every group with this one, or (GROUP=BASELINE, repeatable) each group with its "
    "own, e.g. a Tinker and an OpenAI condition each against its base."
)

BASE = typer.Option(None, "--base", metavar="<model>", help="Only those of this base model.")
SUFFIX = typer.Option(None, "--suffix", metavar="<suffix>", help="Suffix or glob (insecure-*).")
TAGS = typer.Option("--tag", metavar="<key=value>", help="A tag the job must have (repeatable).")
WIDE = typer.Option(False, "--wide", help="Every column and whole ids, however wide the terminal.")
JSON = typer.Option(False, "--json", help="Print JSON instead of text.")
CHECKPOINTS = typer.Option(False, "--checkpoints", help="Include the jobs' checkpoints.")
DELETED = typer.Option(False, "--include-deleted", help="Also models deleted on the API.")
JUDGE_MODEL = typer.Option(None, "--judge-model", help="Ask every judge of this model instead.")
FULL = typer.Option(False, "--full", help="Print the whole summary and every comparison.")
CI_METHODS = ("t", "hierarchical", "plain")
JOB = typer.Argument(help="A job id, a short form `jobs list` prints (ftjob-…a1b2) or a prefix.")
