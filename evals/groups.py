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


def from_db(**query: Any) -> ModelGroups:
    """Groups from the jobs database (`jobs_db.model_groups(**query)`), e.g.
    `from_db(by="suffix", base_model="gpt-4.1-mini")`."""
    import jobs_db

    model_groups = getattr(jobs_db, "model_groups", None)
    if model_groups is None:
        raise RuntimeError("this jobs_db has no model_groups(); write the groups by hand")
    return manual(model_groups(**query))
