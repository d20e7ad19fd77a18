"""The lab's jobs database from its settings: opened, described, upgraded and read (the twins of
`labmgr db`, `jobs list/show`, `models list/groups`), with errors a person can act on."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jobs_db import (
    Database,
    DatabaseDamagedError,
    DatabaseError,
    DatabaseFileEmptyError,
    DatabaseInputError,
    FinetuneJob,
    JobEvent,
    Model,
    SchemaTooNewError,
    Target,
    check_writable,
    current_revision,
    database_file,
    get_job,
    head_revision,
    job_events,
    job_ids_like,
    job_models,
    known_revisions,
    list_jobs,
    model_groups,
    open_database,
    select_models,
    upgrade,
)
from labmgr.errors import LabDatabaseError, LabmgrError, LabNotFound, UnknownJob
from labmgr.settings import DbUrlSource, Settings

DatabaseState = Literal["not created", "empty file", "current", "needs upgrade", "newer"]


class LabDatabaseStatus(BaseModel):
    """Where the lab's database is and which schema it holds (`labmgr db info`)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    db_url: str
    """The database URL, password hidden."""
    source: str
    """Where the URL came from (``LABMGR_DB_URL``, the config file, the default)."""
    file: Path | None
    """The SQLite file, or None for a server database."""
    revision: str | None
    """The schema revision the database is at; None when it has no schema yet."""
    code_revision: str
    """The schema revision this labmgr writes."""
    state: DatabaseState


def _require_lab(settings: Settings) -> None:
    if not settings.home.is_dir():
        raise LabNotFound(
            f"No lab found: {settings.home} ({settings.found_by.value}) does not exist.",
            hint="Run `labmgr init` in your project folder, or pass --home / set LABMGR_HOME.",
        )


def _error(settings: Settings, exc: DatabaseError) -> LabDatabaseError:
    """`exc` from jobs_db as an error that names the lab's database and what to do."""
    if isinstance(exc, DatabaseDamagedError):
        return LabDatabaseError(
            f"The lab's database file {exc.path} is damaged: it is not a SQLite database, or "
            "its contents are corrupt.",
            hint=f"Restore it from a backup, or move it aside (mv {exc.path} "
            f"{exc.path}.damaged) and record your jobs again with `labmgr jobs import "
            "--from-api`.",
        )
    if isinstance(exc, DatabaseFileEmptyError):
        return LabDatabaseError(
            f"The lab's database file {exc.path} is empty (0 bytes), so it holds no jobs.",
            hint="If it should hold your jobs, restore it from a backup; to start a new "
            "database in it, run `labmgr db upgrade` (then `labmgr jobs import --from-api`).",
        )
    if isinstance(exc, SchemaTooNewError):
        return LabDatabaseError(
            f"The database {settings.masked_db_url} was written by a newer labmgr: {exc}.",
            hint="Upgrade labmgr (pip install -U labmgr).",
        )
    origin = {
        DbUrlSource.ENV: "LABMGR_DB_URL",
        DbUrlSource.CONFIG: f"{settings.config_path} (lab.db_url)",
    }.get(settings.db_url_source, f"the lab folder {settings.home}")
    if database_file(settings.db_url) is not None:
        return LabDatabaseError(sentence(exc), hint=f"Check the database path in {origin}.")
    hint = f"Check the URL in {origin} and that the server is reachable."
    return LabDatabaseError(sentence(exc), hint=hint)


def sentence(exc: Exception) -> str:
    """`exc`'s text as a sentence (capital first, full stop)."""
    text = str(exc)
    return f"{text[:1].upper()}{text[1:]}."


@contextmanager
def lab_database(settings: Settings) -> Iterator[Database]:
    """The lab's database, created or upgraded to this code's schema, closed afterwards; a
    zero-byte file raises `LabDatabaseError` (never silently a new lab)."""
    _require_lab(settings)
    try:
        db = open_database(settings.db_url, allow_empty_file=False)
    except DatabaseError as exc:
        raise _error(settings, exc) from None
    with db:
        yield db


def require_writable(settings: Settings, db: Database) -> None:
    """Raise `LabDatabaseError` unless the lab's database takes writes: checked before anything
    is bought that must be recorded."""
    try:
        check_writable(db)
    except DatabaseError as exc:
        raise _error(settings, exc) from None


def lab_database_status(settings: Settings) -> LabDatabaseStatus:
    """Where the lab's database is and its schema revision; changes nothing (`db info`)."""
    file = database_file(settings.db_url)
    try:
        revision = current_revision(settings.db_url)
    except DatabaseError as exc:
        raise _error(settings, exc) from None
    head = head_revision()
    state: DatabaseState
    if file is not None and file.is_file() and file.stat().st_size == 0:
        state = "empty file"
    elif revision is None:
        state = "not created"
    elif revision == head:
        state = "current"
    elif revision in known_revisions():
        state = "needs upgrade"
    else:
        state = "newer"
    return LabDatabaseStatus(
        db_url=settings.masked_db_url,
        source=settings.db_url_source.value,
        file=file,
        revision=revision,
        code_revision=head,
        state=state,
    )


def upgrade_lab_database(settings: Settings) -> str:
    """Create or migrate the lab's database (also in a zero-byte file); returns the revision."""
    _require_lab(settings)
    try:
        return upgrade(settings.db_url)
    except DatabaseError as exc:
        raise _error(settings, exc) from None


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
