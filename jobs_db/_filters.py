"""Filter arguments (tags, globs, statuses) made into the SQL conditions of queries."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any, Literal, TypedDict

from sqlalchemy import ColumnElement, Table, and_, exists, false, or_, select, true

from jobs_db._access import table_of
from jobs_db._tables import FinetuneJob, JobTag, Model
from jobs_db.errors import DatabaseInputError

Tags = Mapping[str, str] | Iterable[str]
"""Tags as ``{"condition": "insecure"}`` or ``["condition=insecure", "seed=3"]``."""

Statuses = str | Iterable[str]
"""One job status (``"running"``) or several (``["queued", "running"]``)."""

Checkpoints = bool | Literal["only"]
"""False: final models only; True: final models and checkpoints; ``"only"``: checkpoints."""

MODELS = table_of(Model)
JOBS = table_of(FinetuneJob)
TAGS = table_of(JobTag)


class ModelFilters(TypedDict, total=False):
    """Filters accepted by ``select_models`` and by ``model_groups(where=…)``."""

    suffix: str
    tags: Tags
    status: Statuses
    organization: str
    project: str


def parse_tags(tags: Tags | None) -> dict[str, str]:
    """``{key: value}`` from a mapping or ``key=value`` strings; raises on malformed tags."""
    if tags is None:
        return {}
    if isinstance(tags, str):
        tags = [tags]
    pairs: list[tuple[object, object]] = []
    if isinstance(tags, Mapping):
        pairs = list(tags.items())
    else:
        for item in tags:
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
    """A LIKE pattern matching a superset of the fnmatch ``pattern`` (escape char ``\\``)."""
    out = []
    for char in pattern:
        if char == "[":
            out.append("%")
            break
        if char in "%_\\":
            out.append("\\" + char)
        else:
            out.append({"*": "%", "?": "_"}.get(char, char))
    return "".join(out)


def text_matches(column: ColumnElement[str], pattern: str) -> ColumnElement[bool]:
    """Equality, or a LIKE that ``glob_matches`` checks again (LIKE's case rules differ)."""
    if not any(char in pattern for char in "*?["):
        return column == pattern
    return column.like(_like_prefilter(pattern), escape="\\")


def glob_matches(value: str | None, pattern: str | None) -> bool:
    if pattern is None:
        return True
    return value is not None and fnmatchcase(value, pattern)


def tag_conditions(job_id: ColumnElement[str], tags: Tags | None) -> list[ColumnElement[bool]]:
    return [
        exists(
            select(TAGS.c.job_id).where(
                TAGS.c.job_id == job_id, TAGS.c.key == key, TAGS.c.value == value
            )
        )
        for key, value in parse_tags(tags).items()
    ]


def model_kinds(checkpoints: Checkpoints, include_base: bool) -> list[str]:
    if checkpoints not in (False, True, "only"):
        raise DatabaseInputError(f"checkpoints must be False, True or 'only', not {checkpoints!r}")
    kinds = {False: ["final"], True: ["final", "checkpoint"], "only": ["checkpoint"]}
    return kinds[checkpoints] + (["base"] if include_base else [])


def model_conditions(
    *,
    base_model: str | None = None,
    suffix: str | None = None,
    tags: Tags | None = None,
    status: Statuses | None = None,
    organization: str | None = None,
    project: str | None = None,
    checkpoints: Checkpoints = False,
    include_base: bool = False,
    include_deleted: bool = False,
) -> ColumnElement[bool]:
    """The WHERE clause over ``models`` outer-joined to ``finetune_jobs``."""
    conditions: list[ColumnElement[bool]] = [
        MODELS.c.kind.in_(model_kinds(checkpoints, include_base))
    ]
    if not include_deleted:
        conditions.append(MODELS.c.deleted_at.is_(None))
    if base_model is not None:
        conditions.append(
            or_(
                MODELS.c.base_model == base_model,
                JOBS.c.base_model == base_model,
                JOBS.c.resolved_base_model == base_model,
            )
        )
    conditions.extend(_status_conditions(status))
    conditions.extend(
        _shared_conditions(MODELS, MODELS.c.job_id, suffix, organization, project, tags)
    )
    return and_(true(), *conditions)


def job_conditions(
    *,
    status: Statuses | None = None,
    base_model: str | None = None,
    suffix: str | None = None,
    tags: Tags | None = None,
    organization: str | None = None,
    project: str | None = None,
) -> ColumnElement[bool]:
    """The WHERE clause over ``finetune_jobs``."""
    conditions = _status_conditions(status)
    if base_model is not None:
        conditions.append(
            or_(JOBS.c.base_model == base_model, JOBS.c.resolved_base_model == base_model)
        )
    conditions.extend(_shared_conditions(JOBS, JOBS.c.id, suffix, organization, project, tags))
    return and_(true(), *conditions)


def _status_conditions(status: Statuses | None) -> list[ColumnElement[bool]]:
    if status is None:
        return []
    statuses = [status] if isinstance(status, str) else list(status)
    return [JOBS.c.status.in_(statuses) if statuses else false()]


def _shared_conditions(
    table: Table,
    job_id: ColumnElement[Any],
    suffix: str | None,
    organization: str | None,
    project: str | None,
    tags: Tags | None,
) -> list[ColumnElement[bool]]:
    """Filters that read the same on models and jobs: suffix glob, owner, tags."""
    conditions: list[ColumnElement[bool]] = []
    if suffix is not None:
        conditions.append(text_matches(table.c.suffix, suffix))
    if organization is not None:
        conditions.append(table.c.organization_id == organization)
    if project is not None:
        conditions.append(table.c.project_id == project)
    conditions.extend(tag_conditions(job_id, tags))
    return conditions
