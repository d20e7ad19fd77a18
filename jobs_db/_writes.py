"""Writes: idempotent upserts of the fields set explicitly on a record, so
``FinetuneJob(id="ftjob-1", status="running")`` changes the status and nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, inspect, select, update
from sqlmodel import Session

from jobs_db._database import Target, insert_or_update, refuse_naive_times, set_columns, using
from jobs_db._queries import CURVES, EVENTS, FILES, JOBS, MODELS, TAGS, Tags, parse_tags
from jobs_db._tables import FinetuneJob, JobEvent, Model, TrainingCurve, TrainingFile
from jobs_db.errors import DatabaseInputError, UnknownJobError


def upsert_file(target: Target, file: TrainingFile) -> None:
    """Record an uploaded training file, or update the fields set on ``file``."""
    values = set_columns(file)
    values.pop("id", None)
    with using(target, write=True) as session:
        insert_or_update(session, FILES, {"id": file.id}, values)


def upsert_job(target: Target, job: FinetuneJob, *, tags: Tags | None = None) -> bool:
    """Insert the job or update the fields set on ``job`` (a new job needs ``status``); merge
    ``tags``, and ``JobTag`` objects added to ``job.tags``, into its tags.

    False, and nothing written, when the stored row was refreshed later than
    ``job.refreshed_at``. A ``fine_tuned_model`` creates the final ``Model`` row; the job's
    models follow its base model, suffix, organization and project.
    """
    values = set_columns(job)
    values.pop("id", None)
    added = inspect(job).attrs.tags.history.added or ()  # tags=[JobTag(…)] on the object
    parsed_tags = {**{tag.key: tag.value for tag in added}, **parse_tags(tags)}
    parse_tags(parsed_tags)  # validates the tags that came as JobTag objects too
    with using(target, write=True) as session:
        if not insert_or_update(session, JOBS, {"id": job.id}, values, unless_newer="refreshed_at"):
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
_MODEL_FIELDS = frozenset({
    "base_model", "resolved_base_model", "suffix", "organization_id", "project_id",
    "fine_tuned_model", "finished_at",
})  # fmt: skip


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
    """Record a model, or update the fields set on ``model``. A job's model carries its job's
    base model, suffix, organization and project; a base model is its own ``base_model``."""
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
    """Make ``checkpoints`` (each with ``name`` and ``step``) the job's checkpoint rows: add
    or update them (None keeps the stored value), drop the others. The one named like the
    job's final model updates that final row."""
    for checkpoint in checkpoints:
        if checkpoint.step is None:
            raise DatabaseInputError(
                f"checkpoint {checkpoint.name!r} of {job_id}: step is required"
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
                MODELS.c.job_id == job_id, MODELS.c.kind == "checkpoint", MODELS.c.name.not_in(keep)
            )
        )


def mark_model_deleted(target: Target, name: str, deleted_at: datetime) -> bool:
    """Record that the model ``name`` was deleted on the API (the row stays); False if unknown."""
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


def store_curve(target: Target, curve: TrainingCurve) -> None:
    """Record a job's curves (replacing any stored for it); the job must be recorded."""
    if not curve.header or curve.header[0] != "step":
        raise DatabaseInputError(
            f"curves of job {curve.job_id}: the first column must be 'step', not "
            f"{(curve.header or ['nothing'])[0]!r}"
        )
    width = len(curve.header)
    for index, row in enumerate(curve.rows):
        if len(row) != width:
            raise DatabaseInputError(
                f"curves of job {curve.job_id}: row {index + 1} has {len(row)} values for "
                f"{width} columns"
            )
    values = set_columns(curve)
    values.pop("job_id", None)
    with using(target, write=True) as session:
        if session.get(FinetuneJob, curve.job_id) is None:
            raise DatabaseInputError(
                f"fine-tuning job {curve.job_id!r} is not in the database; record it first"
            )
        insert_or_update(session, CURVES, {"job_id": curve.job_id}, values)
