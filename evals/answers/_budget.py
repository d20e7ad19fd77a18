"""Answers cut by the token budget: which models gave empty answers with `finish_reason`
"length" (marked `CUT_BY_BUDGET` in the frame), and how far to raise their budget."""

from __future__ import annotations

import json
import math

import pandas as pd

from evals.answers._frame import CUT_BY_BUDGET
from evals.runner import BudgetCut

__all__ = ["budget_cuts"]

_LIMITS = ("max_completion_tokens", "max_tokens")


def _round_up(value: float, step: int = 256) -> int:
    return int(math.ceil(value / step) * step)


def budget_cuts(frame: pd.DataFrame) -> dict[str, BudgetCut]:
    """Each model with answers cut by its token budget, and a budget to try instead."""
    if "error" not in frame.columns or not (frame["error"] == CUT_BY_BUDGET).any():
        return {}
    cuts: dict[str, BudgetCut] = {}
    cut_rows = frame["error"] == CUT_BY_BUDGET
    for model, rows in frame.groupby("model", sort=False):
        mine = cut_rows.loc[rows.index]
        if not mine.any():
            continue
        sent = json.loads(str(rows.loc[mine, "api_kwargs"].iloc[0] or "{}"))
        parameter = next((name for name in _LIMITS if name in sent), "max_completion_tokens")
        limit = sent.get(parameter)
        complete = rows.loc[rows["finish_reason"] == "stop", "completion_tokens"]
        most = float(complete.max()) if len(complete) else 0.0
        suggested = _round_up(max(1024.0, 4.0 * float(limit or 0), 2.0 * most))
        cuts[str(model)] = BudgetCut(int(mine.sum()), len(rows), parameter, limit, suggested)
    return cuts
