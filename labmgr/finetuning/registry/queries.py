"""Reading the lab's jobs and models: the library twins of `labmgr jobs list/show` and
`labmgr models list/groups`, with filters checked and job ids found from a short form."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jobs_db import (
    Database,
    DatabaseInputError,
    FinetuneJob,
    JobEvent,
    Model,
    Target,
    get_job,
    job_events,
    job_ids_like,
    job_models,
    list_jobs,
    model_groups,
    select_models,
)
from labmgr.errors import LabmgrError, UnknownJob
from labmgr.finetuning.registry.database import lab_database, sentence
from labmgr.settings import Settings

_NOT_FINAL = ("validating_files", "queued", "running", "paused")
JOB_STATUSES = ("queued_locally", *_NOT_FINAL, "succeeded", "failed", "cancelled", "unknown")
"""The API's statuses, ``queued_locally`` (held back by the daily job limit) and ``unknown``
(imported from llmcomp without a status; `update` checks it)."""

_ELLIPSES = ("…", "...")
_SHOWN_CANDIDATES = 5


@dataclass(frozen=True)
class JobDetails:
    """One job with its events (oldest first) and models (by step, final model last)."""

    job: FinetuneJob
    events: list[JobEvent]
    models: list[Model]


def _unknown(reference: str) -> UnknownJob:
    return UnknownJob(
        f"Job {reference} is not in the lab's database.",
        hint="See `labmgr jobs list` (or `--wide` for whole ids), or record jobs made "
        "elsewhere with `labmgr jobs import --from-api`.",
    )


def find_job(target: Target, reference: str) -> FinetuneJob:
    """The one recorded job `reference` names: a whole id, a shortened one as the tables print
    it (``ftjob-…a1b2``), a prefix or, failing that, the end of an id. Raises `UnknownJob`, or
    `LabmgrError` listing the matches."""
    text = reference.strip()
    if not text:
        raise LabmgrError("The job id is empty.", hint="Pass a job id from `labmgr jobs list`.")
    job = get_job(target, text) or get_job(target, _only_match(target, text))
    if job is None:  # deleted between the two reads
        raise _unknown(text)
    return job


def _only_match(target: Target, text: str) -> str:
    limit = _SHOWN_CANDIDATES + 1
    ellipsis = next((mark for mark in _ELLIPSES if mark in text), None)
    if ellipsis is not None:
        starts, _, ends = text.partition(ellipsis)
        matches = job_ids_like(target, starts=starts, ends=ends, limit=limit)
    else:
        matches = job_ids_like(target, starts=text, limit=limit) or job_ids_like(
            target, ends=text, limit=limit
        )
    if not matches:
        raise _unknown(text)
    if len(matches) > 1:
        shown = ", ".join(matches[:_SHOWN_CANDIDATES])
        more = ", …" if len(matches) > _SHOWN_CANDIDATES else ""
        raise LabmgrError(
            f"{text} names several jobs ({shown}{more}).",
            hint="Give more characters of the id, or the whole id (`labmgr jobs list --wide`).",
        )
    return matches[0]


_TAG_HINT = "Write a tag as key=value, e.g. condition=insecure."


@contextmanager
def _reading(settings: Settings, hint: str | None = None) -> Iterator[Database]:
    """The lab's database, a bad filter raised as `LabmgrError` with `hint`."""
    with lab_database(settings) as db:
        try:
            yield db
        except DatabaseInputError as exc:
            raise LabmgrError(sentence(exc), hint=hint) from None


def lab_jobs(
    settings: Settings, *, status: str | Sequence[str] | None = None, **filters: Any
) -> list[FinetuneJob]:
    """The lab's jobs matching every filter of `jobs_db.list_jobs`, oldest first; a status no
    job can have raises `LabmgrError` instead of matching nothing."""
    for value in [status] if isinstance(status, str) else status or []:
        if value not in JOB_STATUSES:
            raise LabmgrError(
                f"{value!r} is not a job status.", hint=f"Use one of: {', '.join(JOB_STATUSES)}."
            )
    with _reading(settings, _TAG_HINT) as db:
        return list_jobs(db, status=status, **filters)


def job_details(settings: Settings, reference: str) -> JobDetails:
    """One job (named as `find_job` accepts) with its events and models."""
    with lab_database(settings) as db:
        job = find_job(db, reference)
        return JobDetails(job=job, events=job_events(db, job.id), models=job_models(db, job.id))


def lab_models(settings: Settings, **filters: Any) -> list[Model]:
    """The lab's models matching every filter of `jobs_db.select_models` (``base_model``,
    ``suffix``, ``tags``, ``checkpoints``, ``include_deleted``, …), oldest first."""
    with _reading(settings, _TAG_HINT) as db:
        return select_models(db, **filters)


def lab_model_groups(
    settings: Settings, by: str = "suffix", **options: Any
) -> dict[str, list[str]]:
    """The lab's models grouped for an evaluation, as `jobs_db.model_groups` groups them
    (``base_model``, ``include_base``, ``checkpoints``, ``include_deleted``)."""
    with _reading(settings) as db:
        return model_groups(db, by=by, **options)
