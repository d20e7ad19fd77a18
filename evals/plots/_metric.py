"""The Emergent-Misalignment paper's figure: a derived metric (the share of misaligned
answers) per question per group with its interval, questions along the axis, on 0–1."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from evals.plots._axes import ScaleArgument, scale_axis, scale_for, summary_scale
from evals.plots._interval_rows import ordered
from evals.plots._style import (
    colours,
    figure_title,
    legend_label,
    markers,
    new_figure,
    style_axes,
    wrap,
)
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
    """`metric`'s mean per question (along the x axis) and group (side by side, colour and
    marker) with its 95% interval, from a summary table (`evals.stats.summarize`). The value
    axis spans the metric's scale (0–1 for a share; `scale` as in `means_figure`). A pooled
    row (`ALL_QUESTIONS`) comes last, set apart by a line."""
    summary = folded_levels(summary, by)
    rows = summary[summary["score"].astype(str) == metric]
    if rows.empty:
        known = ", ".join(repr(s) for s in dict.fromkeys(summary["score"].astype(str)))
        raise ValueError(f"the summary has no score {metric!r} (it has {known or 'none'})")
    question_list = ordered(rows["question"], questions)
    if ALL_QUESTIONS in question_list:
        question_list = [q for q in question_list if q != ALL_QUESTIONS] + [ALL_QUESTIONS]
    group_list = ordered(rows["group"], groups)
    if not question_list or not group_list:
        raise ValueError("nothing to plot: the questions or groups asked for are absent")
    table = rows.assign(question=rows["question"].astype(str), group=rows["group"].astype(str))
    n_questions, n_groups = len(question_list), len(group_list)
    width = float(np.clip(1.2 + n_questions * (0.35 + 0.12 * n_groups), 6.0, 24.0))
    figure, axes = new_figure(width, 4.8)
    ax = axes[0][0]
    style_axes(ax)
    palette, shapes = colours(n_groups), markers(n_groups)
    spread = min(0.7, 0.16 * n_groups)
    offsets = np.linspace(-spread / 2, spread / 2, n_groups) if n_groups > 1 else np.zeros(1)
    for gi, group in enumerate(group_list):
        part = table[table["group"] == group]
        for qi, question in enumerate(question_list):
            match = part[part["question"] == question]
            if match.empty:
                continue
            row = match.iloc[0]
            mean = float(row["mean"])
            if np.isnan(mean):
                continue
            low, high = float(row["ci_low"]), float(row["ci_high"])
            below = 0.0 if np.isnan(low) else max(mean - low, 0.0)
            above = 0.0 if np.isnan(high) else max(high - mean, 0.0)
            ax.errorbar(
                qi + offsets[gi],
                mean,
                yerr=[[below], [above]],
                fmt=shapes[gi],
                color=palette[gi],
                markersize=5,
                capsize=2,
                linewidth=1.3,
                clip_on=False,
            )
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
    handles = [
        Line2D(
            [],
            [],
            color=palette[i],
            marker=shapes[i],
            linestyle="",
            label=legend_label(g, n_groups),
        )
        for i, g in enumerate(group_list)
    ]
    figure.legend(
        handles=handles, loc="outside right upper", title="group", fontsize=8, frameon=False
    )
    figure_title(figure, title if title is not None else f"{metric} per question")
    return figure
