"""The headline figure: each group's mean score with its 95% interval, per question, one
panel per score (judge or metric), each drawn on its score's own scale."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from evals.plots._axes import ScaleArgument, scale_axis, scale_for, summary_scale
from evals.plots._interval_rows import IntervalColumns, interval_panels, ordered
from evals.stats import folded_levels

__all__ = ["means_figure"]


def means_figure(
    summary: pd.DataFrame,
    *,
    questions: Sequence[str] | None = None,
    scores: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
    by: str | Sequence[str] | None = None,
) -> Figure:
    """Means with intervals from a summary table (`evals.stats.summarize`).

    One panel per score, its value axis spanning the score's scale: `scale` (one for all
    panels, or one per score name), else the range the summary records, else the score's
    default (0–100) — never the data's spread, so panels of one kind share their axis. With
    one question the groups are the rows of each panel; with several, each question is a
    block of rows and the groups are told apart by colour and marker (legend on the right).
    A tall figure repeats the value axis on top. Labels are wrapped so long names stay
    readable. `by` (grid factors of a split summary) draws each level like a question.
    """
    summary = folded_levels(summary, by)
    if summary.empty:
        raise ValueError("the summary is empty: no question has a numeric score to plot")
    question_list = ordered(summary["question"], questions)
    score_list = ordered(summary["score"], scores)
    group_list = ordered(summary["group"], groups)
    if not question_list or not score_list or not group_list:
        raise ValueError("nothing to plot: the questions, scores or groups asked for are absent")

    def axis(ax: Axes, score: str, rows: pd.DataFrame) -> None:
        scale_axis(ax, scale_for(score, scale, summary_scale(rows)))

    columns = IntervalColumns("mean", "ci_low", "ci_high", axis, "mean (95% CI)")
    return interval_panels(
        summary,
        columns,
        questions=question_list,
        scores=score_list,
        groups=group_list,
        title=title,
    )
