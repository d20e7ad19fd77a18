"""The organization's daily job limit: recognised, as an error saying when a slot frees."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import openai
from openai import OpenAI

from jobs_db import Database, FinetuneJob, list_jobs
from labmgr.accounts import Credential
from labmgr.errors import DailyJobLimit
from labmgr.finetuning.registry.records import timestamp

DAY = timedelta(hours=24)
RETRY_WHEN_UNKNOWN = timedelta(hours=1)
MIN_WAIT = timedelta(minutes=5)
"""The shortest wait after a refusal (an estimate in the past: other projects hold slots)."""
_LIMIT = re.compile(r"maximum of (\d+) fine-tuning (?:requests|jobs) per day", re.IGNORECASE)


def is_daily_limit(exc: openai.APIStatusError) -> bool:
    """True for the 429 the API sends when the organization's daily job quota is used up."""
    if exc.status_code != 429:
        return False
    code = exc.code or ""
    return "daily" in code or bool(_LIMIT.search(str(exc.message)))


def slot_time(limit: DailyJobLimit, now: datetime) -> datetime:
    """When to try again after `limit`: the time a slot frees, at least `MIN_WAIT` away."""
    return max(limit.frees_at or now + RETRY_WHEN_UNKNOWN, now + MIN_WAIT)


def _recent_api_jobs(client: OpenAI, since: datetime) -> tuple[dict[str, datetime], set[str]]:
    seen: dict[str, datetime] = {}
    organizations: set[str] = set()
    try:
        for job in client.fine_tuning.jobs.list(limit=100):
            created = timestamp(job.created_at)
            if created is None or created < since:
                break
            seen[job.id] = created
            organizations.add(job.organization_id)
    except openai.APIError:
        pass  # the estimate then rests on the database alone
    return seen, organizations


def _recent_db_jobs(
    db: Database, credential: Credential, organizations: set[str], since: datetime
) -> dict[str, datetime]:
    found = {}
    for job in list_jobs(db):
        mine = job.organization_id in organizations or (
            credential.project is not None and job.project_id == credential.project
        )
        if mine and job.created_at is not None and job.created_at >= since:
            found[job.id] = job.created_at
    return found


def daily_limit_error(
    exc: openai.APIStatusError,
    client: OpenAI,
    db: Database,
    credential: Credential,
    created: list[FinetuneJob],
) -> DailyJobLimit:
    """`DailyJobLimit` with the time a slot frees, from jobs of the last 24 h (API and DB)."""
    now = datetime.now(UTC)
    since = now - DAY
    match = _LIMIT.search(str(exc.message))
    limit = int(match.group(1)) if match else None
    times, organizations = _recent_api_jobs(client, since)
    times.update(_recent_db_jobs(db, credential, organizations, since))
    ordered = sorted(times.values())
    # the slot the oldest of the last `limit` jobs holds (with fewer jobs: the oldest one's)
    first = max(0, len(ordered) - limit) if limit else 0
    frees_at = ordered[first] + DAY if ordered else None
    created_ids = ", ".join(job.id for job in created)
    done = f" {len(created)} job(s) were created first: {created_ids}." if created else ""
    quota = f"its limit of {limit} fine-tuning jobs per day" if limit else "its daily job limit"
    if frees_at is not None:
        wait = max(timedelta(0), frees_at - now)
        hours, rest = divmod(int(wait.total_seconds()), 3600)
        when = f"A slot frees at {frees_at:%Y-%m-%d %H:%M} UTC (in ~{hours}h {rest // 60}m)."
        if limit and len(ordered) < limit:
            when = (
                f"Only {len(ordered)} job(s) of this lab were created in the last 24 h, so jobs "
                f"of other projects use slots too; a slot frees by {frees_at:%Y-%m-%d %H:%M} UTC."
            )
    else:
        when = "No job of this lab was created in the last 24 h: other projects use the slots."
    return DailyJobLimit(
        f"The organization ({credential.key_env}) reached {quota}.{done} {when}",
        hint="Wait for the slot, or use a key of another organization (--key).",
        limit=limit,
        frees_at=frees_at,
        created=created,
    )
