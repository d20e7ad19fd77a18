"""Seaborn figures of eval results. Every function returns a `matplotlib.figure.Figure`
(never shows a window), uses a colour-blind-safe palette and stays legible with 20 groups.

from evals import plot
plot(q, groups, kind="means")       # group means with 95% intervals, one panel per judge
"""

from evals.plots._distributions import answer_shares, answers_figure, scores_figure
from evals.plots._entry import KINDS, PlotKind, plot, plot_frame
from evals.plots._means import means_figure
from evals.plots._relations import MAX_SCATTER_POINTS, checkpoints_figure, scatter_figure
from evals.plots._style import OTHER

__all__ = [
    "KINDS",
    "MAX_SCATTER_POINTS",
    "OTHER",
    "PlotKind",
    "answer_shares",
    "answers_figure",
    "checkpoints_figure",
    "means_figure",
    "plot",
    "plot_frame",
    "scatter_figure",
    "scores_figure",
]
