"""A score with its 95% interval per group against something else: per question (the
Emergent-Misalignment paper's figure of a metric), over runs, and against cost."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from evals.plots._axes import ScaleArgument, scale_axis, scale_for, summary_scale
from evals.plots._intervals import ordered
from evals.plots._style import (
    draw_intervals,
    finish,
    group_handles,
    group_styles,
    new_figure,
    note_handle,
    wrap,
)
from evals.stats import ALL_QUESTIONS, SHARE, folded_levels


def metric_figure(
    summary: pd.DataFrame,
    metric: str = "misaligned",
    *,
    groups: Sequence[str] | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
    by: str | Sequence[str] | None = None,
) -> Figure:
    """`metric`'s mean per question (x) and group (side by side) with its 95% interval, from
    a summary table, on the metric's scale; the pooled row (`ALL_QUESTIONS`) last, set apart
    by a line."""
    summary = folded_levels(summary, by)
    rows = summary[summary["score"].astype(str) == metric]
    if rows.empty:
        known = ", ".join(repr(s) for s in dict.fromkeys(summary["score"].astype(str)))
        raise ValueError(f"the summary has no score {metric!r} (it has {known or 'none'})")
    question_list = ordered(rows["question"], None)
    if ALL_QUESTIONS in question_list:
        question_list = [q for q in question_list if q != ALL_QUESTIONS] + [ALL_QUESTIONS]
    group_list, styles = group_styles(rows["group"], groups)
    if not question_list or not group_list:
        raise ValueError("nothing to plot: the questions or groups asked for are absent")
    table = rows.assign(question=rows["question"].astype(str), group=rows["group"].astype(str))
    n_questions, n_groups = len(question_list), len(group_list)
    width = float(np.clip(1.2 + n_questions * (0.35 + 0.12 * n_groups), 6.0, 24.0))
    figure, (ax,) = new_figure(width, 4.8)
    spread = min(0.7, 0.16 * n_groups)
    offsets = np.linspace(-spread / 2, spread / 2, n_groups) if n_groups > 1 else np.zeros(1)
    cells = {(r["group"], r["question"]): r for r in table.to_dict("records")}
    points = [
        (qi + offsets[gi], *(float(row[c]) for c in ("mean", "ci_low", "ci_high")), styles[g], True)
        for gi, g in enumerate(group_list)
        for qi, q in enumerate(question_list)
        if (row := cells.get((g, q))) is not None
    ]
    draw_intervals(ax, points, capsize=2, markersize=5)
    if ALL_QUESTIONS in question_list and n_questions > 1:
        ax.axvline(n_questions - 1.5, color="#888888", linewidth=0.8)
    ax.set_xticks(
        range(n_questions),
        [wrap(q, 18, 3) for q in question_list],
        rotation=45 if n_questions > 4 else 0,
        ha="right" if n_questions > 4 else "center",
        fontsize=8,
    )
    ax.set_xlim(-0.6, n_questions - 0.4)
    scale_axis(ax, scale_for(metric, scale, summary_scale(rows) or SHARE), axis="y")
    ax.set_ylabel(f"{wrap(metric, 30, 1)} (95% CI)")
    default = f"{metric} per question"
    return finish(figure, group_handles(group_list, styles), default if title is None else title)


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
    figure, (ax,) = new_figure(max(6.0, 1.4 + 1.1 * len(runs)), 4.6)
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
    figure, (ax,) = new_figure(7.2, 4.6)
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
