"""``model_groups``: models of the database grouped for an evaluation, in a stable order."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, select

from jobs_db._database import Target, using
from jobs_db._queries import (
    JOBS,
    MODELS,
    TAGS,
    Checkpoints,
    ModelFilters,
    chronological,
    glob_matches,
    model_conditions,
    select_models,
)
from jobs_db._tables import Model
from jobs_db.errors import DatabaseInputError

GroupKey = Callable[[Model], str | None]
"""Names the group of a model (its ``job`` and the job's ``tags`` are loaded); None skips it."""

_COLUMN_KEYS = {
    "suffix": MODELS.c.suffix,
    "base_model": MODELS.c.base_model,
    "job": MODELS.c.job_id,
}


def model_groups(
    target: Target,
    by: str | GroupKey = "suffix",
    *,
    base_model: str | None = None,
    include_base: bool = True,
    checkpoints: Checkpoints = False,
    where: ModelFilters | Callable[[Model], bool] | None = None,
    include_deleted: bool = False,
) -> dict[str, list[str]]:
    """``{group: [model id, …]}`` ready to hand to an evaluation, groups sorted by name.

    ``by`` is ``"suffix"``, ``"base_model"``, ``"job"``, ``"tag:KEY"`` or a function of a
    :class:`Model` (None or empty leaves the model out); ``where`` takes the filters of
    :func:`select_models` or a predicate. ``include_base`` adds the base model as a group
    named as requested (never the resolved snapshot), unless no model matched.
    """
    filters = _filters_of(where)
    models: list[Model] = []  # as objects, only for a function of them
    if callable(by) or callable(where):
        models = select_models(
            target,
            base_model=base_model,
            checkpoints=checkpoints,
            include_deleted=include_deleted,
            **filters,
        )
        if callable(where):
            models = [model for model in models if where(model)]
    if callable(by):
        # the base as requested, as the column path reads it
        rows = [
            (by(m), m.name, m.created_at, (m.job and m.job.base_model) or m.base_model)
            for m in models
        ]
    else:
        rows = _rows_from_columns(target, by, base_model, checkpoints, filters, include_deleted)
        if callable(where):
            kept = {model.name for model in models}
            rows = [row for row in rows if row[1] in kept]
    members: dict[str, list[tuple[Any, str]]] = defaultdict(list)
    bases: set[str] = set()
    for group, name, created_at, base in rows:
        if group:
            members[group].append((chronological(created_at, name), name))
            if base:
                bases.add(base)
    groups = {group: [name for _, name in sorted(entries)] for group, entries in members.items()}
    if include_base and groups:  # a base alone is no comparison: nothing matched
        for base in [base_model] if base_model else sorted(bases):
            if base in groups:
                raise DatabaseInputError(
                    f"group {base!r} would hold both the base model and models grouped by "
                    f"{by if isinstance(by, str) else 'your key'}; pass include_base=False"
                )
            groups[base] = [base]
    return dict(sorted(groups.items()))


Row = tuple[str | None, str, datetime | None, str | None]


def _filters_of(where: ModelFilters | Callable[[Model], bool] | None) -> dict[str, Any]:
    if where is None or callable(where):
        return {}
    if not isinstance(where, Mapping):
        raise DatabaseInputError(f"where must be a mapping of filters or a function, not {where!r}")
    unknown = sorted(set(where) - set(ModelFilters.__annotations__))
    if unknown:
        allowed = ", ".join(ModelFilters.__annotations__)
        raise DatabaseInputError(f"unknown filter {unknown[0]!r} in where; use {allowed}")
    return dict(where)


def _rows_from_columns(
    target: Target,
    by: str,
    base_model: str | None,
    checkpoints: Checkpoints,
    filters: dict[str, Any],
    include_deleted: bool,
) -> list[Row]:
    """(group, name, created_at, requested base) of the models, read as plain columns."""
    conditions = model_conditions(
        base_model=base_model, checkpoints=checkpoints, include_deleted=include_deleted, **filters
    )
    joined = MODELS.outerjoin(JOBS, MODELS.c.job_id == JOBS.c.id)
    if by.startswith("tag:") and by != "tag:":
        key_column = TAGS.c.value
        joined = joined.outerjoin(
            TAGS, and_(TAGS.c.job_id == MODELS.c.job_id, TAGS.c.key == by.removeprefix("tag:"))
        )
    elif by in _COLUMN_KEYS:
        key_column = _COLUMN_KEYS[by]
    else:
        raise DatabaseInputError(
            f"cannot group by {by!r}; use 'suffix', 'base_model', 'job', 'tag:KEY' or a function"
        )
    requested_base = func.coalesce(JOBS.c.base_model, MODELS.c.base_model)
    statement = select(
        key_column, MODELS.c.name, MODELS.c.created_at, requested_base, MODELS.c.suffix
    ).select_from(joined)
    with using(target, write=False) as session:
        result = session.execute(statement.where(conditions)).all()
    suffix = filters.get("suffix")
    return [(row[0], row[1], row[2], row[3]) for row in result if glob_matches(row[4], suffix)]
