"""The Emergent-Misalignment paper's figure: a metric (the share of misaligned answers) per
question and group with its 95% interval, questions along the axis, on 0–1."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from evals.plots._axes import ScaleArgument, scale_axis, scale_for, summary_scale
from evals.plots._intervals import ordered
from evals.plots._style import draw_intervals, finish, group_handles, group_styles, new_figure, wrap
from evals.stats import ALL_QUESTIONS, SHARE, folded_levels

__all__ = ["metric_figure"]


def metric_figure(
    summary: pd.DataFrame,
    metric: str = "misaligned",
    *,
    questions: Sequence[str] | None = None,
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
    question_list = ordered(rows["question"], questions)
    if ALL_QUESTIONS in question_list:
        question_list = [q for q in question_list if q != ALL_QUESTIONS] + [ALL_QUESTIONS]
    group_list, styles = group_styles(rows["group"], groups)
    if not question_list or not group_list:
        raise ValueError("nothing to plot: the questions or groups asked for are absent")
    table = rows.assign(question=rows["question"].astype(str), group=rows["group"].astype(str))
    n_questions, n_groups = len(question_list), len(group_list)
    width = float(np.clip(1.2 + n_questions * (0.35 + 0.12 * n_groups), 6.0, 24.0))
    figure, axes = new_figure(width, 4.8)
    ax = axes[0][0]
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
