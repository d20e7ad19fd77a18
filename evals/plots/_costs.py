"""Score against cost: each group (large markers) and each of its models (small, hollow) at
its answer cost per 1,000 samples and its mean score with the 95% interval. The score keeps
its scale; cost runs on a log axis when it spans a decade or more."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from evals.plots._axes import ScaleArgument, scale_axis, scale_for, summary_scale
from evals.plots._style import (
    draw_intervals,
    finish,
    group_handles,
    group_styles,
    new_figure,
    note_handle,
)

__all__ = ["LOG_COST_RATIO", "cost_figure"]

LOG_COST_RATIO = 10.0
"""A cost axis whose largest cost is this many times its smallest is logarithmic."""


def cost_figure(
    costs: pd.DataFrame,
    score: str,
    *,
    groups: Sequence[str] | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
) -> Figure:
    """`score` (y) against answer cost per 1,000 samples (x), from a cost table
    (`evals.stats.cost_table`): each group's point with its interval, and its models'."""
    rows = costs[costs["score"].astype(str) == score]
    rows = rows[np.isfinite(rows["answer_cost_per_1k"].astype(float))]
    if rows.empty:
        raise ValueError(f"no priced group has the score {score!r} in the cost table")
    group_list, styles = group_styles(rows["group"], groups)
    figure, axes = new_figure(7.2, 4.6)
    ax = axes[0][0]
    records = rows[rows["group"].astype(str).isin(group_list)].to_dict("records")
    for whole in (False, True):
        points = [
            (float(r["answer_cost_per_1k"]), float(r["mean"]))
            + ((float(r["ci_low"]), float(r["ci_high"])) if whole else (np.nan, np.nan))
            + (styles[str(r["group"])], whole)
            for r in records
            if (r["level"] == "group") == whole
        ]
        size, alpha, zorder = (9, 1.0, 3) if whole else (5, 0.8, 2)
        draw_intervals(ax, points, markersize=size, alpha=alpha, zorder=zorder)
    spread = rows["answer_cost_per_1k"].astype(float)
    positive = spread[spread > 0]
    if len(positive) and positive.max() / positive.min() >= LOG_COST_RATIO:
        ax.set_xscale("log")
        ax.set_xlabel("answer cost per 1,000 samples ($, log scale)")
    else:
        ax.set_xlim(left=0, right=max(float(spread.max()) * 1.15, 1e-9))
        ax.set_xlabel("answer cost per 1,000 samples ($)")
    scale_axis(ax, scale_for(score, scale, summary_scale(rows)), axis="y")
    ax.set_ylabel(f"{score} (95% CI)")
    handles = group_handles(group_list, styles)
    one_model = note_handle("one model", markerfacecolor="white", markersize=5)
    return finish(
        figure, [*handles, one_model], f"{score} against cost" if title is None else title
    )
