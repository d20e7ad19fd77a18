"""The headline figure: each group's mean score with its 95% interval, per question, one
panel per score (judge)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from evals.plots._style import colours, figure_title, markers, new_figure, style_axes, wrap

__all__ = ["means_figure"]


def _ordered(values: pd.Series, wanted: Sequence[str] | None) -> list[str]:
    present = list(dict.fromkeys(values.astype(str)))
    return [v for v in wanted if v in present] if wanted is not None else present


def means_figure(
    summary: pd.DataFrame,
    *,
    questions: Sequence[str] | None = None,
    scores: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Means with intervals from a summary table (`evals.stats.summarize`).

    One panel per score. With one question the groups are the rows of each panel; with
    several, each question is a block of rows and the groups are told apart by colour and
    marker (legend on the right). Labels are wrapped so long names stay readable.
    """
    if summary.empty:
        raise ValueError("the summary is empty: no question has a numeric score to plot")
    question_list = _ordered(summary["question"], questions)
    score_list = _ordered(summary["score"], scores)
    group_list = _ordered(summary["group"], groups)
    if not question_list or not score_list or not group_list:
        raise ValueError("nothing to plot: the questions, scores or groups asked for are absent")
    single = len(question_list) == 1
    rows = len(group_list) if single else len(question_list) * (len(group_list) + 1)
    height = max(2.4, 0.27 * rows + 1.3)
    width = min(4.2 * len(score_list) + (0 if single else 2.6), 22)
    figure, axes = new_figure(width, height, ncols=len(score_list))
    palette, shapes = colours(len(group_list)), markers(len(group_list))
    table = summary.assign(
        question=summary["question"].astype(str), group=summary["group"].astype(str)
    )
    for panel, score in enumerate(score_list):
        ax = axes[0][panel]
        style_axes(ax)
        part = table[table["score"] == score]
        ticks: list[float] = []
        labels: list[str] = []
        for qi, question in enumerate(question_list):
            block = part[part["question"] == question]
            base = qi * (len(group_list) + 1)
            for gi, group in enumerate(group_list):
                row = block[block["group"] == group]
                y = gi if single else base + gi
                if single:
                    ticks.append(y)
                    labels.append(wrap(group, 30, 2))
                if row.empty:
                    continue
                mean = float(row["mean"].iloc[0])
                low, high = float(row["ci_low"].iloc[0]), float(row["ci_high"].iloc[0])
                if np.isnan(mean):
                    continue
                err = [[max(mean - low, 0.0)], [max(high - mean, 0.0)]]
                ax.errorbar(
                    mean,
                    y,
                    xerr=err,
                    fmt=shapes[gi],
                    color=palette[gi],
                    markersize=6,
                    capsize=3,
                    linewidth=1.6,
                )
            if not single:
                ticks.append(base + (len(group_list) - 1) / 2)
                labels.append(wrap(question, 26, 3))
        ax.set_yticks(ticks, labels)
        last = (
            len(group_list)
            - 1
            + (0 if single else (len(question_list) - 1) * (len(group_list) + 1))
        )
        ax.set_ylim(last + 0.8, -0.8)
        if not single:
            for qi in range(1, len(question_list), 2):
                start = qi * (len(group_list) + 1) - 0.5
                ax.axhspan(start, start + len(group_list), color="#f3f3f3", zorder=0)
        ax.set_title(wrap(score, 40, 2), fontsize=10)
        ax.set_xlabel("mean (95% CI)")
        if panel > 0 and not single:
            ax.set_yticklabels([])
    if not single:
        handles = [
            Line2D([], [], color=palette[i], marker=shapes[i], linestyle="", label=wrap(g, 28, 2))
            for i, g in enumerate(group_list)
        ]
        figure.legend(
            handles=handles,
            loc="outside right upper",
            title="group",
            fontsize=8,
            frameon=False,
            ncols=1 if len(group_list) <= 24 else 2,
        )
    figure_title(figure, title if title is not None else (question_list[0] if single else None))
    return figure
