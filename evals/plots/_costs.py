"""Score against cost: each group (large markers) and each of its models (small) at its
answer cost per 1,000 samples and its mean score with the 95% interval — the view for
choosing which model to deploy. The score keeps its own scale; cost runs on a log axis when
it spans a decade or more."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from evals.plots._axes import ScaleArgument, scale_axis, scale_for, summary_scale
from evals.plots._style import colours, figure_title, legend_label, markers, new_figure, style_axes

__all__ = ["LOG_COST_RATIO", "cost_figure"]

LOG_COST_RATIO = 10.0
"""A cost axis whose largest cost is this many times its smallest is logarithmic."""


def cost_figure(
    costs: pd.DataFrame,
    score: str,
    *,
    title: str | None = None,
    scale: ScaleArgument = None,
) -> Figure:
    """`score` (y, on its scale) against answer cost per 1,000 samples (x), from a cost table
    (`evals.stats.cost_table`, a run's costs.csv): a group's point with its interval, and
    its models' points, smaller and hollow, in the group's colour."""
    rows = costs[costs["score"].astype(str) == score]
    rows = rows[np.isfinite(rows["answer_cost_per_1k"].astype(float))]
    if rows.empty:
        raise ValueError(f"no priced group has the score {score!r} in the cost table")
    groups = list(dict.fromkeys(rows["group"].astype(str)))
    figure, axes = new_figure(7.2, 4.6)
    ax = axes[0][0]
    style_axes(ax)
    palette, shapes = colours(len(groups)), markers(len(groups))
    for gi, group in enumerate(groups):
        part = rows[rows["group"].astype(str) == group]
        for row in part.to_dict("records"):
            whole = row["level"] == "group"
            x, y = float(row["answer_cost_per_1k"]), float(row["mean"])
            if math.isnan(y):
                continue
            low, high = float(row["ci_low"]), float(row["ci_high"])
            below = 0.0 if math.isnan(low) else max(y - low, 0.0)
            above = 0.0 if math.isnan(high) else max(high - y, 0.0)
            ax.errorbar(
                x,
                y,
                yerr=[[below], [above]] if whole else None,
                fmt=shapes[gi],
                color=palette[gi],
                markersize=9 if whole else 5,
                markerfacecolor=palette[gi] if whole else "white",
                capsize=3,
                linewidth=1.4,
                alpha=1.0 if whole else 0.8,
                zorder=3 if whole else 2,
                clip_on=False,
            )
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
    handles = [
        Line2D([], [], color=palette[i], marker=shapes[i], linestyle="", label=legend_label(g, 9))
        for i, g in enumerate(groups)
    ]
    handles.append(
        Line2D(
            [],
            [],
            color="#444444",
            marker="o",
            markerfacecolor="white",
            linestyle="",
            markersize=5,
            label="one model",
        )
    )
    figure.legend(
        handles=handles, loc="outside right upper", title="group", fontsize=8, frameon=False
    )
    figure_title(figure, title if title is not None else f"{score} against cost")
    return figure
