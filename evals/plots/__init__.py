"""Figures of eval results. Every function returns a `matplotlib.figure.Figure` (never shows
a window), stays legible with 20 groups, draws every score on its own scale (a 0–100 judge on
0–100, a share on 0–1) and gives each group one colour, by its place in `groups`/`order`.

from evals import plot
plot(q, groups, kind="means")       # group means with 95% intervals, one panel per judge
metric_figure(summary, "misaligned")         # the EM paper's figure: share per question
comparison_figure(compare_groups(frames, "base"))   # differences from the baseline
cost_figure(run.costs(), "misaligned")       # score against answer cost per 1,000 samples
"""

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
