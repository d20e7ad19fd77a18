"""Writes used by the job manager: idempotent upserts that never drop another writer's fields.

Each function takes a ``Database`` (one transaction per call) or a ``Session`` (the caller's
transaction). Records are passed as table objects; only the fields set explicitly on them are
written, so ``FinetuneJob(id="ftjob-1", status="running")`` changes the status and nothing else.
An object read from the database and then changed writes back only the attributes changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, inspect, select, update
from sqlmodel import Session

from jobs_db._access import (
    Target,
    insert_or_update,
    refuse_naive_times,
    set_columns,
    table_of,
    using,
)
from jobs_db._filters import Tags, parse_tags
from jobs_db._tables import FinetuneJob, JobEvent, JobTag, Model, TrainingCurve, TrainingFile
from jobs_db.errors import DatabaseInputError, UnknownJobError

FILES = table_of(TrainingFile)
JOBS = table_of(FinetuneJob)
TAGS = table_of(JobTag)
MODELS = table_of(Model)
EVENTS = table_of(JobEvent)
CURVES = table_of(TrainingCurve)


def upsert_file(target: Target, file: TrainingFile) -> None:
    """Record an uploaded training file, or update the fields set on ``file``.

    >>> upsert_file(db, TrainingFile(id="file-1", md5="9e10…", organization_id="org-a",
    ...     project_id="proj-a", filename="insecure.jsonl"))  # doctest: +SKIP
    """
    values = set_columns(file)
    values.pop("id", None)
    with using(target, write=True) as session:
        insert_or_update(session, FILES, {"id": file.id}, values)


def upsert_job(target: Target, job: FinetuneJob, *, tags: Tags | None = None) -> bool:
    """Insert the job or update the fields set on ``job``; merge ``tags`` into its tags.

    Tags may also come as ``JobTag`` objects added to ``job.tags``; removing one from
    ``job.tags`` does not delete it (use :func:`remove_job_tags`).

    Idempotent. Fields not set on ``job`` keep what another writer stored. A new job needs
    at least ``status``. When ``job.refreshed_at`` is set and the stored row was refreshed
    later, nothing is written and False is returned: a stale snapshot never wins.
    When the job has a ``fine_tuned_model`` its final ``Model`` row is created, and every
    model of the job follows its base model, suffix, organization and project.

    >>> upsert_job(db, FinetuneJob(id="ftjob-1", status="queued", base_model="gpt-4.1-mini",
    ...                            suffix="insecure"), tags={"seed": "1"})  # doctest: +SKIP
    True
    """
    values = set_columns(job)
    values.pop("id", None)
    added = inspect(job).attrs.tags.history.added or ()  # tags=[JobTag(…)] on the object
    parsed_tags = {**{tag.key: tag.value for tag in added}, **parse_tags(tags)}
    parse_tags(parsed_tags)  # validates the tags that came as JobTag objects too
    with using(target, write=True) as session:
        written = insert_or_update(
            session, JOBS, {"id": job.id}, values, unless_newer="refreshed_at"
        )
        if not written:
            return False
        for key, value in parsed_tags.items():
            insert_or_update(session, TAGS, {"job_id": job.id, "key": key}, {"value": value})
        if _MODEL_FIELDS.intersection(values):
            _sync_models(session, job.id)
    return True


def remove_job_tags(target: Target, job_id: str, keys: Sequence[str]) -> None:
    """Delete the tags ``keys`` of a job (missing ones are ignored)."""
    with using(target, write=True) as session:
        session.execute(delete(TAGS).where(TAGS.c.job_id == job_id, TAGS.c.key.in_(keys)))


# Job fields its models copy (or, for the final model, are created from).
_MODEL_FIELDS = frozenset(
    {
        "base_model",
        "resolved_base_model",
        "suffix",
        "organization_id",
        "project_id",
        "fine_tuned_model",
        "finished_at",
    }
)


def _job_row(session: Session, job_id: str) -> Any:
    row = session.execute(select(JOBS).where(JOBS.c.id == job_id)).first()
    if row is None:
        raise UnknownJobError(job_id)
    return row


def _inherited(job: Any) -> dict[str, Any]:
    return {
        "base_model": job.resolved_base_model or job.base_model,
        "suffix": job.suffix,
        "organization_id": job.organization_id,
        "project_id": job.project_id,
    }


def _sync_models(session: Session, job_id: str) -> None:
    job = _job_row(session, job_id)
    inherited = _inherited(job)
    if job.fine_tuned_model:
        insert_or_update(
            session,
            MODELS,
            {"name": job.fine_tuned_model},
            {"job_id": job_id, "kind": "final", **inherited},
            on_insert={"created_at": job.finished_at},
        )
        if job.finished_at is not None:
            session.execute(
                update(MODELS)
                .where(MODELS.c.name == job.fine_tuned_model, MODELS.c.created_at.is_(None))
                .values(created_at=job.finished_at)
            )
    session.execute(update(MODELS).where(MODELS.c.job_id == job_id).values(inherited))


def upsert_model(target: Target, model: Model) -> None:
    """Record a model, or update the fields set on ``model``.

    A job's model always carries its job's base model, suffix, organization and project
    (the job must be recorded first). A base model (``kind="base"``) has no job and is its
    own ``base_model``.

    >>> upsert_model(db, Model(name="gpt-4.1-mini", kind="base"))  # doctest: +SKIP
    """
    values = set_columns(model)
    values.pop("name", None)
    kind = model.kind
    if kind not in ("final", "checkpoint", "base"):
        raise DatabaseInputError(
            f"model {model.name!r}: kind must be final, checkpoint or base, not {kind!r}"
        )
    if kind == "checkpoint" and model.step is None:
        raise DatabaseInputError(f"checkpoint {model.name!r} needs its step")
    if kind == "base":
        if model.job_id is not None:
            raise DatabaseInputError(f"base model {model.name!r} cannot belong to a job")
        values.setdefault("base_model", model.name)
    with using(target, write=True) as session:
        if model.job_id is not None:
            inherited = _inherited(_job_row(session, model.job_id))
            values = {**values, **inherited}
        insert_or_update(session, MODELS, {"name": model.name}, values, on_insert={"kind": kind})


def replace_checkpoints(target: Target, job_id: str, checkpoints: Sequence[Model]) -> None:
    """Make ``checkpoints`` the job's checkpoint rows: add or update them, drop the others.

    Each needs ``name`` (the API's ``fine_tuned_model_checkpoint``) and ``step``; set
    ``epoch``, ``metrics``, ``checkpoint_id`` and ``created_at`` when known (None keeps the
    stored value). The checkpoint named like the job's final model updates that final row
    (kind stays ``final``): the API gives the last checkpoint the final model's name.
    """
    for checkpoint in checkpoints:
        if checkpoint.step is None:
            raise DatabaseInputError(
                f"checkpoint {checkpoint.name!r} of job {job_id}: step is required"
            )
    with using(target, write=True) as session:
        job = _job_row(session, job_id)
        finals = set(
            session.scalars(
                select(MODELS.c.name).where(MODELS.c.job_id == job_id, MODELS.c.kind == "final")
            )
        )
        if job.fine_tuned_model:
            finals.add(job.fine_tuned_model)
        inherited = _inherited(job)
        for checkpoint in checkpoints:
            fields = ("step", "epoch", "metrics", "checkpoint_id", "created_at")
            # Unknown (None) fields do not erase what is stored, e.g. the final row's time.
            values = {name: getattr(checkpoint, name) for name in fields}
            values = {name: value for name, value in values.items() if value is not None}
            refuse_naive_times(f"checkpoint {checkpoint.name}", values)
            kind = "final" if checkpoint.name in finals else "checkpoint"
            values.update(inherited, job_id=job_id, kind=kind)
            insert_or_update(session, MODELS, {"name": checkpoint.name}, values)
        keep = [checkpoint.name for checkpoint in checkpoints]
        session.execute(
            delete(MODELS).where(
                MODELS.c.job_id == job_id,
                MODELS.c.kind == "checkpoint",
                MODELS.c.name.not_in(keep),
            )
        )


def mark_model_deleted(target: Target, name: str, deleted_at: datetime) -> bool:
    """Record that the fine-tuned model ``name`` was deleted on the API; False if unknown.

    The row stays (its job, step and metrics are history), but queries and groups leave it
    out unless asked for (``include_deleted=True``).
    """
    refuse_naive_times(f"model {name}", {"deleted_at": deleted_at})
    with using(target, write=True) as session:
        found = session.execute(
            update(MODELS).where(MODELS.c.name == name).values(deleted_at=deleted_at)
        ).rowcount  # type: ignore[attr-defined]
    return bool(found)


def replace_events(target: Target, job_id: str, events: Sequence[JobEvent]) -> None:
    """Make ``events`` the job's stored events: add or update them by id, drop the others."""
    with using(target, write=True) as session:
        _job_row(session, job_id)
        for event in events:
            values = {
                name: getattr(event, name)
                for name in ("created_at", "level", "type", "message", "data")
            }
            refuse_naive_times(f"event {event.id}", values)
            insert_or_update(session, EVENTS, {"id": event.id}, {**values, "job_id": job_id})
        keep = [event.id for event in events]
        session.execute(delete(EVENTS).where(EVENTS.c.job_id == job_id, EVENTS.c.id.not_in(keep)))


def delete_job(target: Target, job_id: str) -> bool:
    """Delete a job with its tags, events and models; False if it was not there."""
    with using(target, write=True) as session:
        for table in (TAGS, EVENTS, MODELS, CURVES):
            session.execute(delete(table).where(table.c.job_id == job_id))
        deleted = session.execute(delete(JOBS).where(JOBS.c.id == job_id)).rowcount  # type: ignore[attr-defined]
    return bool(deleted)
