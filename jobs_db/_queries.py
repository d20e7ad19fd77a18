"""Reads and their filters (tags, globs, statuses as SQL conditions); objects come loaded for use
after the call (a job's ``tags``, a model's ``job``), in an order independent of collation."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any, Literal, TypedDict

from sqlalchemy import ColumnElement, Table, and_, exists, false, or_, select, true
from sqlalchemy.orm import contains_eager

from jobs_db._database import Target, table_of, using
from jobs_db._tables import (
    FINAL_STATUSES,
    QUEUED_LOCALLY,
    FinetuneJob,
    JobEvent,
    JobTag,
    Model,
    TrainingCurve,
    TrainingFile,
)
from jobs_db.errors import DatabaseInputError

MODELS = table_of(Model)
JOBS = table_of(FinetuneJob)
TAGS = table_of(JobTag)
FILES = table_of(TrainingFile)
EVENTS = table_of(JobEvent)
CURVES = table_of(TrainingCurve)
_EARLIEST = datetime.min.replace(tzinfo=UTC)


Tags = Mapping[str, str] | Iterable[str]
"""Tags as ``{"condition": "insecure"}`` or ``["condition=insecure", "seed=3"]``."""

Statuses = str | Iterable[str]
"""One job status (``"running"``) or several (``["queued", "running"]``)."""

Checkpoints = bool | Literal["only"]
"""False: final models only; True: final models and checkpoints; ``"only"``: checkpoints."""


class ModelFilters(TypedDict, total=False):
    """Filters accepted by ``select_models`` and by ``model_groups(where=…)``."""

    suffix: str
    tags: Tags
    status: Statuses
    organization: str
    project: str


def parse_tags(tags: Tags | None) -> dict[str, str]:
    """``{key: value}`` from a mapping or ``key=value`` strings; raises on malformed tags."""
    if isinstance(tags, str):
        tags = [tags]
    pairs: list[tuple[object, object]] = []
    if isinstance(tags, Mapping):
        pairs = list(tags.items())
    else:
        for item in tags or []:
            if not isinstance(item, str) or "=" not in item:
                raise DatabaseInputError(f"tag {item!r} must look like key=value")
            text_key, text_value = item.split("=", 1)
            pairs.append((text_key.strip(), text_value.strip()))
    parsed: dict[str, str] = {}
    for key, value in pairs:
        if not isinstance(key, str) or not key or "=" in key:
            raise DatabaseInputError(f"tag key {key!r} must be a non-empty string without '='")
        if not isinstance(value, str):
            raise DatabaseInputError(f"tag {key}={value!r}: the value must be a string")
        parsed[key] = value
    return parsed


def _like_prefilter(pattern: str) -> str:
    """A LIKE pattern matching a superset of the fnmatch ``pattern`` (escape char ``\\``):
    its literal text, ``*`` and ``?`` as ``%`` and ``_``, anything from a ``[`` as ``%``."""
    head, bracket, _ = pattern.partition("[")
    return _like_literal(head).replace("*", "%").replace("?", "_") + ("%" if bracket else "")


def glob_matches(value: str | None, pattern: str | None) -> bool:
    """True when no pattern is given, or `value` matches it (case-sensitive, as fnmatch)."""
    if pattern is None:
        return True
    return value is not None and fnmatchcase(value, pattern)


def job_conditions(
    *,
    status: Statuses | None = None,
    base_model: str | None = None,
    suffix: str | None = None,
    tags: Tags | None = None,
    organization: str | None = None,
    project: str | None = None,
    table: Table = JOBS,
) -> ColumnElement[bool]:
    """The WHERE clause over ``finetune_jobs``, or over ``models`` (``table=MODELS``)
    outer-joined to it. A suffix glob is a LIKE pre-filter that `glob_matches` checks again,
    as LIKE's case rules differ between databases."""
    conditions: list[ColumnElement[bool]] = []
    if status is not None:
        statuses = [status] if isinstance(status, str) else list(status)
        conditions.append(JOBS.c.status.in_(statuses) if statuses else false())
    if base_model is not None:
        bases = [JOBS.c.base_model, JOBS.c.resolved_base_model]
        bases += [MODELS.c.base_model] if table is MODELS else []
        conditions.append(or_(*(column == base_model for column in bases)))
    if suffix is not None and any(char in suffix for char in "*?["):
        conditions.append(table.c.suffix.like(_like_prefilter(suffix), escape="\\"))
    elif suffix is not None:
        conditions.append(table.c.suffix == suffix)
    if organization is not None:
        conditions.append(table.c.organization_id == organization)
    if project is not None:
        conditions.append(table.c.project_id == project)
    job_id = MODELS.c.job_id if table is MODELS else JOBS.c.id
    for key, value in parse_tags(tags).items():
        tagged = (TAGS.c.job_id == job_id) & (TAGS.c.key == key) & (TAGS.c.value == value)
        conditions.append(exists(select(TAGS.c.job_id).where(tagged)))
    return and_(true(), *conditions)


def model_conditions(
    *,
    checkpoints: Checkpoints = False,
    include_base: bool = False,
    include_deleted: bool = False,
    **filters: Any,
) -> ColumnElement[bool]:
    """The WHERE clause over ``models`` outer-joined to ``finetune_jobs``: `job_conditions`
    and the kinds of model asked for."""
    if checkpoints not in (False, True, "only"):
        raise DatabaseInputError(f"checkpoints must be False, True or 'only', not {checkpoints!r}")
    kinds = {False: ["final"], True: ["final", "checkpoint"], "only": ["checkpoint"]}
    kind = MODELS.c.kind.in_(kinds[checkpoints] + (["base"] if include_base else []))
    deleted = true() if include_deleted else MODELS.c.deleted_at.is_(None)
    return and_(kind, deleted, job_conditions(table=MODELS, **filters))


def chronological(created_at: datetime | None, name: str) -> tuple[bool, datetime, str]:
    """Sort key: creation time (unknown first), then name."""
    return (created_at is not None, created_at or _EARLIEST, name)


def jobs_where(target: Target, where: Any, suffix: str | None = None) -> list[FinetuneJob]:
    """Jobs matching the condition ``where`` (and the glob ``suffix``), oldest first."""
    with using(target, write=False) as session:
        jobs = list(session.scalars(select(FinetuneJob).where(where)))
    jobs = [job for job in jobs if glob_matches(job.suffix, suffix)]
    return sorted(jobs, key=lambda job: chronological(job.created_at, job.id))


def select_models(
    target: Target,
    *,
    base_model: str | None = None,
    suffix: str | None = None,
    tags: Tags | None = None,
    status: Statuses | None = None,
    checkpoints: Checkpoints = False,
    organization: str | None = None,
    project: str | None = None,
    include_base: bool = False,
    include_deleted: bool = False,
) -> list[Model]:
    """Models matching every given filter, oldest first (ties by name).

    ``base_model`` matches as requested or as resolved (a snapshot's models too); ``suffix``
    is exact or a case-sensitive glob (``insecure-*``); every given tag of the job must match;
    ``status`` is the job's. Base-model rows and deleted models only when asked.
    """
    where = model_conditions(
        base_model=base_model,
        suffix=suffix,
        tags=tags,
        status=status,
        organization=organization,
        project=project,
        checkpoints=checkpoints,
        include_base=include_base,
        include_deleted=include_deleted,
    )
    statement = (
        select(Model)
        .outerjoin(FinetuneJob, MODELS.c.job_id == JOBS.c.id)
        .options(contains_eager(Model.job))  # type: ignore[arg-type]
        .where(where)
    )
    with using(target, write=False) as session:
        models = list(session.scalars(statement).unique())
    models = [model for model in models if glob_matches(model.suffix, suffix)]
    return sorted(models, key=lambda model: chronological(model.created_at, model.name))


def list_jobs(
    target: Target,
    *,
    status: Statuses | None = None,
    base_model: str | None = None,
    suffix: str | None = None,
    tags: Tags | None = None,
    organization: str | None = None,
    project: str | None = None,
) -> list[FinetuneJob]:
    """Jobs matching every given filter (as in :func:`select_models`), oldest first."""
    where = job_conditions(
        status=status,
        base_model=base_model,
        suffix=suffix,
        tags=tags,
        organization=organization,
        project=project,
    )
    return jobs_where(target, where, suffix)


def get_job(target: Target, job_id: str) -> FinetuneJob | None:
    with using(target, write=False) as session:
        return session.get(FinetuneJob, job_id)


def job_ids_like(target: Target, *, starts: str = "", ends: str = "", limit: int = 20) -> list[str]:
    """Ids of jobs that start with ``starts`` and end with ``ends`` (literal, case-sensitive),
    sorted, at most ``limit``: what a shortened id (``ftjob-…a1b2``) names."""
    pattern = f"{_like_literal(starts)}%{_like_literal(ends)}"
    query = select(JOBS.c.id).where(JOBS.c.id.like(pattern, escape="\\"))
    with using(target, write=False) as session:
        found = [str(job_id) for job_id in session.scalars(query)]
    # SQLite's LIKE ignores ASCII case: keep only exact matches.
    return sorted(i for i in found if i.startswith(starts) and i.endswith(ends))[:limit]


def _like_literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def non_final_jobs(target: Target) -> list[FinetuneJob]:
    """Jobs on the API whose status may still change (jobs queued locally are left out)."""
    return jobs_where(target, JOBS.c.status.not_in([*sorted(FINAL_STATUSES), QUEUED_LOCALLY]))


def jobs_with_suffix(
    target: Target,
    suffix: str,
    *,
    organization: str | None = None,
    project: str | None = None,
) -> list[FinetuneJob]:
    """Every job (any status) created with exactly this suffix."""
    where = job_conditions(organization=organization, project=project)
    return jobs_where(target, where & (JOBS.c.suffix == suffix))


def get_file(target: Target, file_id: str) -> TrainingFile | None:
    with using(target, write=False) as session:
        return session.get(TrainingFile, file_id)


def find_file(
    target: Target,
    md5: str,
    organization_id: str | None,
    project_id: str | None,
    *,
    endpoint: str | None = None,
) -> TrainingFile | None:
    """The latest upload of this content in this organization and project, or None."""
    where = (
        (FILES.c.md5 == md5)
        & FILES.c.organization_id.is_not_distinct_from(organization_id)
        & FILES.c.project_id.is_not_distinct_from(project_id)
    )
    if endpoint is not None:
        where = where & (FILES.c.endpoint == endpoint)
    with using(target, write=False) as session:
        files = list(session.scalars(select(TrainingFile).where(where)))
    return max(
        files,
        key=lambda file: chronological(file.uploaded_at or file.created_at, file.id),
        default=None,
    )


def job_models(target: Target, job_id: str) -> list[Model]:
    """The job's final model and checkpoints, by step (final model last when steps tie)."""
    with using(target, write=False) as session:
        models = list(session.scalars(select(Model).where(MODELS.c.job_id == job_id)))
    return sorted(models, key=lambda m: (m.step is None, m.step or 0, m.kind == "final", m.name))


def job_events(target: Target, job_id: str) -> list[JobEvent]:
    """The job's stored events, oldest first."""
    with using(target, write=False) as session:
        events = list(session.scalars(select(JobEvent).where(EVENTS.c.job_id == job_id)))
    return sorted(events, key=lambda event: chronological(event.created_at, event.id))


def job_curves(target: Target, job_ids: Iterable[str] | None = None) -> dict[str, TrainingCurve]:
    """``{job id: curves}`` for the given jobs (every job with curves when None)."""
    statement = select(TrainingCurve)
    if job_ids is not None:
        wanted = sorted(set(job_ids))
        if not wanted:
            return {}
        statement = statement.where(CURVES.c.job_id.in_(wanted))
    with using(target, write=False) as session:
        curves = list(session.scalars(statement))
    return {curve.job_id: curve for curve in sorted(curves, key=lambda c: c.job_id)}


def jobs_missing_curves(target: Target) -> list[FinetuneJob]:
    """Succeeded jobs whose results file is known but not stored yet (oldest first)."""
    stored = select(CURVES.c.job_id).where(
        CURVES.c.job_id == JOBS.c.id, CURVES.c.file_id == JOBS.c.result_file_id
    )
    where = and_(JOBS.c.status == "succeeded", JOBS.c.result_file_id.is_not(None), ~stored.exists())
    return jobs_where(target, where)
