"""The training curves of a run's fine-tuned models, from the lab's database, for the run
folder (`training_curves.csv`) and its report."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from labmgr.settings import Settings

__all__ = ["run_curves"]


def run_curves(
    lab: Settings | None,
    groups: Mapping[str, Sequence[str]],
    models: Mapping[str, Mapping[str, Any]] | None,
    logger: logging.Logger,
) -> pd.DataFrame | None:
    """One row per job and step for the run's models whose job the lab has curves of, the
    ``group`` column being the run's group of that model; None without a lab, jobs or curves.
    """
    if lab is None or not models:
        return None
    job_of = {
        name: str(facts["job"])
        for name, facts in models.items()
        if isinstance(facts, Mapping) and facts.get("job")
    }
    group_of = {
        job_of[m]: group for group, members in groups.items() for m in members if m in job_of
    }
    if not group_of:
        return None
    from labmgr.errors import LabmgrError
    from labmgr.finetuning import training_curves

    try:
        curves = training_curves(lab, sorted(group_of), by="job")
    except LabmgrError as error:
        logger.info("no training curves in the run: %s", error.message)
        return None
    curves["group"] = curves["job_id"].map(group_of)
    missing = curves.attrs.get("missing") or []
    if missing:
        logger.info("%d job(s) of the run have no training curves yet", len(missing))
    return curves
