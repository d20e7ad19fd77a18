"""Model groups and per-model facts (job, kind, step, epoch) from the jobs database."""

from __future__ import annotations

from typing import Any

__all__ = ["groups_from_database"]


def groups_from_database(
    url: str,
    *,
    by: str = "suffix",
    base_model: str | None = None,
    include_base: bool = False,
    checkpoints: bool = False,
) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """Groups from `jobs_db.model_groups` on the database at `url`, and the facts the run
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
            }
            for row in rows
            if row.name in members
        }
    return groups, facts
