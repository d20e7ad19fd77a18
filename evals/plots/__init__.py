"""Figures of eval results, each a `matplotlib.figure.Figure` (never a window), every score on
its own scale, each group one colour by its place in `groups`/`order`."""

from evals.plots._axes import TALL_INCHES, ScaleArgument
from evals.plots._distributions import answer_shares, answers_figure, scores_figure
from evals.plots._entry import PlotKind, plot, plot_frame
from evals.plots._intervals import comparison_figure, means_figure
from evals.plots._layout import lay_out
from evals.plots._points import cost_figure, history_figure, metric_figure
from evals.plots._relations import checkpoints_figure, scatter_figure
from evals.plots._style import OTHER

__all__ = [
    "OTHER",
    "TALL_INCHES",
    "PlotKind",
    "ScaleArgument",
    "answer_shares",
    "answers_figure",
    "checkpoints_figure",
    "comparison_figure",
    "cost_figure",
    "history_figure",
    "lay_out",
    "means_figure",
    "metric_figure",
    "plot",
    "plot_frame",
    "scatter_figure",
    "scores_figure",
]
