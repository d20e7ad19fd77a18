"""Each group's difference from the baseline with its interval, per question and score: the
figure of `evals.stats.compare_groups`."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from evals.plots._axes import ScaleArgument, difference_axis, scale_for, summary_scale
from evals.plots._interval_rows import IntervalColumns, interval_panels, ordered
from evals.stats import folded_levels

__all__ = ["comparison_figure"]


def comparison_figure(
    comparisons: pd.DataFrame,
    *,
    questions: Sequence[str] | None = None,
    scores: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    alpha: float = 0.05,
    title: str | None = None,
    scale: ScaleArgument = None,
    by: str | Sequence[str] | None = None,
) -> Figure:
    """Differences from the baseline with their 95% intervals (a comparison table from
    `evals.stats.compare_groups`), one panel per score, a line at zero.

    A marker is filled when the Holm-adjusted p-value is below `alpha`, hollow otherwise.
    The value axis runs over ± the score's scale width (±100 for a 0–100 judge, ±1 for a
    share; `scale` as in `means_figure`), so every panel of one kind has the same axis."""
    comparisons = folded_levels(comparisons, by)
    if comparisons.empty:
        raise ValueError("the comparison table is empty: no group was compared")
    question_list = ordered(comparisons["question"], questions)
    score_list = ordered(comparisons["score"], scores)
    group_list = ordered(comparisons["group"], groups)
    if not question_list or not score_list or not group_list:
        raise ValueError("nothing to plot: the questions, scores or groups asked for are absent")
    baselines = list(dict.fromkeys(comparisons["baseline"].astype(str)))

    def axis(ax: Axes, score: str, rows: pd.DataFrame) -> None:
        difference_axis(ax, scale_for(score, scale, summary_scale(rows)))

    def significant(row: pd.Series) -> bool:
        return bool(row["p_adjusted"] < alpha)

    notes = (
        Line2D([], [], color="#444444", marker="o", linestyle="", label=f"adjusted p < {alpha:g}"),
        Line2D(
            [],
            [],
            color="#444444",
            marker="o",
            markerfacecolor="white",
            linestyle="",
            label=f"adjusted p ≥ {alpha:g}",
        ),
    )
    columns = IntervalColumns(
        "difference",
        "ci_low",
        "ci_high",
        axis,
        f"difference from {' / '.join(baselines)} (95% CI)",
        filled=significant,
        reference=0.0,
        legend_notes=notes,
    )
    return interval_panels(
        comparisons,
        columns,
        questions=question_list,
        scores=score_list,
        groups=group_list,
        title=title if title is not None else f"Against {' / '.join(baselines)}",
    )
