"""Model groups: `{group name: [model, …]}`, written by hand (`manual`) or taken from a lab's
jobs database (`from_db`, `groups_from_database`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.errors import GroupsError

if TYPE_CHECKING:
    from labmgr.settings import Settings

__all__ = [
    "ModelGroups",
    "base_group",
    "from_db",
    "groups_from_database",
    "manual",
    "own_baselines",
]

ModelGroups = dict[str, list[str]]


def manual(groups: Mapping[str, Iterable[str]]) -> ModelGroups:
    """Validate hand-written groups: non-empty names, non-empty lists of model names."""
    result: ModelGroups = {}
    for name, models in groups.items():
        if not isinstance(name, str) or not name:
            raise GroupsError(f"group names must be non-empty strings, got {name!r}")
        if isinstance(models, str):
            raise GroupsError(f"group {name!r}: expected a list of models, not {models!r}")
        members = list(models)
        if not members or not all(isinstance(m, str) and m for m in members):
            raise GroupsError(f"group '{name}': expected a non-empty list of model names")
        result[name] = members
    if not result:
        raise GroupsError("no groups given")
    return result


def from_db(
    by: Any = "suffix",
    *,
    database: Any = None,
    lab: Settings | None = None,
    home: str | Path | None = None,
    **query: Any,
) -> ModelGroups:
    """`jobs_db.model_groups(database, by, **query)` on `database` (a `jobs_db.Database` or
    URL), else on the database of `lab`, else of the lab found from `home` as every command
    finds it."""
    from jobs_db import Database, model_groups, open_database

    if isinstance(database, Database):
        groups = model_groups(database, by, **query)
    else:
        if database is None:
            if lab is None:
                from labmgr.settings import load_settings

                lab = load_settings(home)
            database = lab.db_url
        with open_database(database) as opened:
            groups = model_groups(opened, by, **query)
    if not groups:
        raise GroupsError(f"the database has no models matching by={by!r} {query or ''}".strip())
    return manual(groups)


def groups_from_database(
    url: str,
    *,
    by: str = "suffix",
    base_model: str | None = None,
    include_base: bool = True,
    checkpoints: bool = False,
) -> tuple[ModelGroups, dict[str, dict[str, Any]]]:
    """Groups from `jobs_db.model_groups` on the database at `url`, and the facts a run
    records about each model the database knows: `{model: {job, kind, step, epoch, …}}`."""
    from jobs_db import model_groups, open_database, select_models

    with open_database(url) as db:
        groups = model_groups(
            db, by=by, base_model=base_model, include_base=include_base, checkpoints=checkpoints
        )
        members = {m for models in groups.values() for m in models}
        rows = select_models(db, base_model=base_model, checkpoints=checkpoints, include_base=True)
        facts = {
            row.name: {
                "job": row.job_id,
                "kind": row.kind,
                "step": row.step,
                "epoch": row.epoch,
                "suffix": row.suffix,
                "base_model": row.base_model,
                "requested_base": (row.job and row.job.base_model) or row.base_model,
            }
            for row in rows
            if row.name in members
        }
    return groups, facts


def own_baselines(
    groups: Mapping[str, Iterable[str]], facts: Mapping[str, Mapping[str, Any]]
) -> str | dict[str, str] | None:
    """The natural baseline of groups from the database: the base model's group; with
    fine-tunes of several base models (say an OpenAI and a Tinker one), each group's own base
    (`{group: base group}`, for a group whose models share one base that has a group). None
    when no group has a base group to be compared with."""
    bases = _base_groups(groups, facts)
    if len(bases) == 1:
        return bases[0]
    own: dict[str, str] = {}
    for name, models in groups.items():
        of = {facts.get(m, {}).get("requested_base") for m in models}
        if name not in bases and len(of) == 1 and (base := of.pop()) in bases:
            own[name] = str(base)
    return own or None


def _base_groups(
    groups: Mapping[str, Iterable[str]], facts: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    return [
        name
        for name, models in groups.items()
        if list(models) == [name] and facts.get(name, {}).get("kind", "base") == "base"
    ]


def base_group(
    groups: Mapping[str, Iterable[str]], facts: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """The group of the base model `groups_from_database` adds: named after its one model,
    no fine-tune the database knows (`facts`). None when there is no such group or several
    (then nothing is the natural baseline)."""
    found = _base_groups(groups, facts)
    return found[0] if len(found) == 1 else None
