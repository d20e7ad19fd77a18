"""Model groups: `{group name: [model, …]}`, written by hand or taken from the jobs database."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ModelGroups", "from_db", "manual"]

ModelGroups = dict[str, list[str]]


def manual(groups: Mapping[str, Iterable[str]]) -> ModelGroups:
    """Validate hand-written groups: non-empty names, non-empty lists of model names."""
    result: ModelGroups = {}
    for name, models in groups.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"group names must be non-empty strings, got {name!r}")
        if isinstance(models, str):
            raise ValueError(f"group {name!r}: expected a list of models, not {models!r}")
        members = list(models)
        if not members or not all(isinstance(m, str) and m for m in members):
            raise ValueError(f"group '{name}': expected a non-empty list of model names")
        result[name] = members
    if not result:
        raise ValueError("no groups given")
    return result


def from_db(by: Any = "suffix", *, database: Any = None, **query: Any) -> ModelGroups:
    """Groups from the jobs database: `jobs_db.model_groups(database, by, **query)`.

    `database` is a `jobs_db.Database` or URL; by default the lab's database. For example
    `from_db("suffix", base_model="gpt-4.1-mini")` or `from_db("tag:condition")`.
    """
    from jobs_db import Database, model_groups, open_database

    if not isinstance(database, Database):
        if database is None:
            from evals.lab import lab_settings

            settings = lab_settings()
            if settings is None:
                raise ValueError("no lab found: pass database= or run `labmgr init`")
            database = settings.db_url
        database = open_database(database)
    groups = model_groups(database, by, **query)
    if not groups:
        raise ValueError(f"the database has no models matching by={by!r} {query or ''}".strip())
    return manual(groups)
