"""A score over runs: each group's mean with its 95% interval per run (in date order), a line
per group, and the changes beyond their intervals ringed."""

from __future__ import annotations

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
    wrap,
)
from evals.stats import ALL_QUESTIONS

__all__ = ["history_figure"]


def history_figure(
    history: pd.DataFrame,
    score: str,
    *,
    question: str | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
) -> Figure:
    """The rows of a history table (`evals.experiments.run_history`): runs along x (by date),
    `score` on its scale, a line per group; a ring marks a change from the group's previous
    run whose Holm-adjusted p is below 0.05."""
    rows = history[history["score"].astype(str) == score]
    if rows.empty:
        raise ValueError(f"the history has no score {score!r}")
    runs = list(dict.fromkeys(rows["run"].astype(str)))
    dates = {
        str(r["run"]): str(r.get("started") or "")[:16].replace("T", " ")
        for r in rows.to_dict("records")
    }
    groups, styles = group_styles(rows["group"])
    figure, axes = new_figure(max(6.0, 1.4 + 1.1 * len(runs)), 4.6)
    ax = axes[0][0]
    spread = min(0.3, 0.06 * len(groups))
    offsets = np.linspace(-spread, spread, len(groups)) if len(groups) > 1 else np.zeros(1)
    for gi, group in enumerate(groups):
        colour = styles[group][0]
        records = rows[rows["group"].astype(str) == group].to_dict("records")
        at = [runs.index(str(r["run"])) + offsets[gi] for r in records]
        points = [
            (x, *(float(r[c]) for c in ("mean", "ci_low", "ci_high")), styles[group], True)
            for x, r in zip(at, records, strict=True)
        ]
        drawn = draw_intervals(ax, points)
        moved = [p for p, r in zip(points, records, strict=True) if p in drawn and bool(r["moved"])]
        for x, mean, *_ in moved:
            ax.plot(x, mean, "o", markersize=15, markerfacecolor="none", color=colour)
        ax.plot(
            [p[0] for p in drawn], [p[1] for p in drawn], color=colour, linewidth=1.0, alpha=0.7
        )
    ax.set_xticks(range(len(runs)), [wrap(dates[r] or r, 12, 2) for r in runs], fontsize=8)
    ax.set_xlim(-0.6, len(runs) - 0.4)
    scale_axis(ax, scale_for(score, scale, summary_scale(rows)), axis="y")
    ax.set_ylabel(f"{wrap(score, 30, 1)} (95% CI)")
    changed = note_handle("changed (Holm p < 0.05)", markersize=12, markerfacecolor="none")
    where = "" if question in (None, ALL_QUESTIONS) else f" on {question}"
    handles = [*group_handles(groups, styles, linestyle="-"), changed]
    default = f"{score}{where} over runs"
    return finish(figure, handles, default if title is None else title, legend_title=None)
