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
