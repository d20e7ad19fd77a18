"""Points with intervals, a panel per score: group means (`means_figure`, the headline figure)
and differences from the baseline (`comparison_figure`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from evals.plots._axes import ScaleArgument, repeat_on_top, scale_axis, scale_for, summary_scale
from evals.plots._style import (
    draw_intervals,
    finish,
    group_handles,
    group_styles,
    new_figure,
    note_handle,
    wrap,
)
from evals.stats import folded_levels


def ordered(values: pd.Series, wanted: Sequence[str] | None) -> list[str]:
    """The distinct values in order of appearance, or those of `wanted` that appear."""
    present = list(dict.fromkeys(values.astype(str)))
    return [v for v in wanted if v in present] if wanted is not None else present


def means_figure(
    summary: pd.DataFrame,
    *,
    scores: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
    by: str | Sequence[str] | None = None,
) -> Figure:
    """Means with 95% intervals from a summary table (`evals.stats.summarize`), one panel per
    score on its scale: `scale` (one for all, or one per score), else the range the summary
    records, else the score's default — never the data's spread. With one question the
    groups are the rows; with several, each question is a block of rows and groups are told
    apart by colour and marker. `by` (grid factors) draws each level like a question."""
    table = folded_levels(summary, by)
    if table.empty:
        raise ValueError("the summary is empty: no question has a numeric score to plot")
    return _panels(table, "mean", scale, "mean (95% CI)", scores, groups, title)


def comparison_figure(
    comparisons: pd.DataFrame,
    *,
    scores: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
    by: str | Sequence[str] | None = None,
) -> Figure:
    """Differences from the baseline with 95% intervals (`evals.stats.compare_groups`), one
    panel per score, a line at zero, on ± the score's width. A marker is filled when the
    Holm-adjusted p is below 0.05, hollow otherwise."""
    table = folded_levels(comparisons, by)
    if table.empty:
        raise ValueError("the comparison table is empty: no group was compared")
    baselines = " / ".join(dict.fromkeys(table["baseline"].astype(str)))
    return _panels(
        table,
        "difference",
        scale,
        f"difference from {baselines} (95% CI)",
        scores,
        groups,
        title if title is not None else f"Against {baselines}",
        filled=lambda row: bool(row["p_adjusted"] < 0.05),
        notes=[
            note_handle("adjusted p < 0.05"),
            note_handle("adjusted p ≥ 0.05", markerfacecolor="white"),
        ],
    )


def _panels(
    table: pd.DataFrame,
    value: str,
    scale: ScaleArgument,
    label: str,
    scores: Sequence[str] | None,
    groups: Sequence[str] | None,
    title: str | None,
    *,
    filled: Callable[[Mapping[str, Any]], bool] = lambda row: True,
    notes: Sequence[object] = (),
) -> Figure:
    """One panel per score, on its scale (as `means_figure` says; a difference on ± the
    scale's width). Tall figures repeat the value axis on top."""
    question_list = ordered(table["question"], None)
    score_list = ordered(table["score"], scores)
    group_list, styles = group_styles(table["group"], groups)
    if not question_list or not score_list or not group_list:
        raise ValueError("nothing to plot: the questions, scores or groups asked for are absent")
    single, difference = len(question_list) == 1, value == "difference"
    block = len(group_list) + 1
    rows = len(group_list) if single else len(question_list) * block
    height = max(2.4, 0.27 * rows + 1.3)
    width = min(4.2 * len(score_list) + (0 if single else 2.6), 22)
    figure, axes = new_figure(width, height, ncols=len(score_list))
    cells: dict[tuple[str, str, str], Any] = {}
    for row in table.to_dict("records"):
        cells.setdefault((str(row["score"]), str(row["question"]), str(row["group"])), row)
    ticks: list[float]
    if single:
        ticks, labels = list(range(len(group_list))), [wrap(g, 30, 2) for g in group_list]
    else:
        ticks = [qi * block + (len(group_list) - 1) / 2 for qi in range(len(question_list))]
        labels = [wrap(q, 26, 3) for q in question_list]
    for panel, score in enumerate(score_list):
        ax = axes[panel]
        points = []
        for qi, question in enumerate(question_list):
            for gi, group in enumerate(group_list):
                one = cells.get((score, question, group))
                if one is not None:
                    position = (0 if single else qi * block) + gi
                    bounds = (float(one["ci_low"]), float(one["ci_high"]))
                    points.append(
                        (position, float(one[value]), *bounds, styles[group], filled(one))
                    )
        draw_intervals(ax, points, horizontal=True, linewidth=1.6)
        ax.set_yticks(ticks, labels)
        ax.set_ylim(rows - (0.2 if single else 1.2), -0.8)
        if not single:
            for qi in range(1, len(question_list), 2):
                ax.axhspan(
                    qi * block - 0.5, qi * block - 0.5 + len(group_list), color="#f3f3f3", zorder=0
                )
        if difference:
            ax.axvline(0.0, color="#444444", linewidth=1.0, zorder=1)
        ax.set_title(wrap(score, 40, 2), fontsize=10)
        ax.set_xlabel(label)
        rows_of = table[table["score"] == score]
        scale_axis(ax, scale_for(score, scale, summary_scale(rows_of)), difference=difference)
        repeat_on_top(ax, height)
        if panel > 0 and not single:
            ax.set_yticklabels([])
    handles = [] if single else group_handles(group_list, styles)
    default = question_list[0] if single else None
    return finish(
        figure,
        [*handles, *notes],
        title if title is not None else default,
        legend_title=None if single else "group",
        fitted=True,
    )
