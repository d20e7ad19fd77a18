"""A score over runs: each group's mean with its 95% interval per run (in date order), a line
per group, and the changes beyond their intervals ringed."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from evals.plots._axes import ScaleArgument, scale_axis, scale_for, summary_scale
from evals.plots._style import (
    colours,
    figure_title,
    legend_label,
    markers,
    new_figure,
    style_axes,
    wrap,
)

__all__ = ["history_figure"]


def history_figure(
    history: pd.DataFrame,
    score: str,
    *,
    question: str | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
) -> Figure:
    """The rows of a history table (`evals.experiments.run_history`): runs along the x axis
    (labelled by date), `score` on its own scale, one line per group; a ring marks a change
    from the group's previous run whose Holm-adjusted p is below 0.05."""
    rows = history[history["score"].astype(str) == score]
    if rows.empty:
        raise ValueError(f"the history has no score {score!r}")
    runs = list(dict.fromkeys(rows["run"].astype(str)))
    dates = {
        str(r["run"]): str(r.get("started") or "")[:16].replace("T", " ")
        for r in rows.to_dict("records")
    }
    groups = list(dict.fromkeys(rows["group"].astype(str)))
    figure, axes = new_figure(max(6.0, 1.4 + 1.1 * len(runs)), 4.6)
    ax = axes[0][0]
    style_axes(ax)
    palette, shapes = colours(len(groups)), markers(len(groups))
    spread = min(0.3, 0.06 * len(groups))
    offsets = np.linspace(-spread, spread, len(groups)) if len(groups) > 1 else np.zeros(1)
    for gi, group in enumerate(groups):
        part = rows[rows["group"].astype(str) == group]
        xs, ys = [], []
        for row in part.to_dict("records"):
            x = runs.index(str(row["run"])) + offsets[gi]
            mean = float(row["mean"])
            if np.isnan(mean):
                continue
            low, high = float(row["ci_low"]), float(row["ci_high"])
            ax.errorbar(
                x,
                mean,
                yerr=[
                    [0.0 if np.isnan(low) else mean - low],
                    [0.0 if np.isnan(high) else high - mean],
                ],
                fmt=shapes[gi],
                color=palette[gi],
                markersize=6,
                capsize=3,
                linewidth=1.4,
                clip_on=False,
            )
            if bool(row["moved"]):
                ax.plot(x, mean, "o", markersize=15, markerfacecolor="none", color=palette[gi])
            xs.append(x)
            ys.append(mean)
        ax.plot(xs, ys, color=palette[gi], linewidth=1.0, alpha=0.7)
    ax.set_xticks(range(len(runs)), [wrap(dates[r] or r, 12, 2) for r in runs], fontsize=8)
    ax.set_xlim(-0.6, len(runs) - 0.4)
    scale_axis(ax, scale_for(score, scale, summary_scale(rows)), axis="y")
    ax.set_ylabel(f"{wrap(score, 30, 1)} (95% CI)")
    handles = [
        Line2D([], [], color=palette[i], marker=shapes[i], linestyle="-", label=legend_label(g, 9))
        for i, g in enumerate(groups)
    ]
    handles.append(
        Line2D(
            [],
            [],
            color="#444444",
            marker="o",
            markersize=12,
            markerfacecolor="none",
            linestyle="",
            label="changed (Holm p < 0.05)",
        )
    )
    figure.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)
    where = "" if question in (None, "(all)") else f" on {question}"
    figure_title(figure, title if title is not None else f"{score}{where} over runs")
    return figure
