"""Scores against each other and against training: two judges in one scatter coloured by
group, and a score along the checkpoints of each fine-tuning job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from evals.plots._axes import ScaleArgument, scale_axis, scale_for
from evals.plots._layout import fit_margins
from evals.plots._style import (
    figure_title,
    group_handles,
    group_styles,
    legend,
    new_figure,
    style_axes,
    wrap,
)
from evals.stats import DEFAULT_SEED, plain_bootstrap

__all__ = ["MAX_SCATTER_POINTS", "checkpoints_figure", "scatter_figure"]

MAX_SCATTER_POINTS = 20_000
"""Points drawn at most (an evenly seeded subsample beyond); group means use every row."""


def scatter_figure(
    frame: pd.DataFrame,
    x: str,
    y: str,
    *,
    order: Sequence[str] | None = None,
    title: str | None = None,
    max_points: int = MAX_SCATTER_POINTS,
    scale: ScaleArgument = None,
) -> Figure:
    """One point per sample at (`x`, `y`) in its group's colour, each group's mean a large
    outlined marker; both axes on their score's scale (`scale`: one for both or per score)."""
    data = pd.DataFrame(
        {
            "group": frame["group"].astype(str).to_numpy(),
            "x": pd.to_numeric(frame[x], errors="coerce").to_numpy(float),
            "y": pd.to_numeric(frame[y], errors="coerce").to_numpy(float),
        }
    ).dropna()
    if data.empty:
        raise ValueError(f"no sample has both {x!r} and {y!r}")
    groups, styles = group_styles(data["group"], order)
    shown = data.sample(n=max_points, random_state=DEFAULT_SEED) if len(data) > max_points else data
    figure, axes = new_figure(9.5, 6.2)
    ax = axes[0][0]
    style_axes(ax)
    alpha = float(np.clip(30 / np.sqrt(len(shown)), 0.08, 0.7))
    for group in groups:
        colour, marker = styles[group]
        part = shown[shown["group"] == group]
        ax.scatter(
            part["x"],
            part["y"],
            s=10,
            alpha=alpha,
            color=colour,
            marker=marker,
            linewidths=0,
            rasterized=True,
        )
        whole = data[data["group"] == group]
        ax.scatter(
            whole["x"].mean(),
            whole["y"].mean(),
            s=110,
            color=colour,
            marker=marker,
            edgecolors="black",
            linewidths=1.2,
            zorder=4,
        )
    ax.set_xlabel(wrap(x, 50, 1))
    ax.set_ylabel(wrap(y, 50, 1))
    scale_axis(ax, scale_for(x, scale), "x")
    scale_axis(ax, scale_for(y, scale), "y")
    legend(figure, group_handles(groups, styles, markersize=7), title="group (mean: large)")
    fit_margins(figure, figure_title(figure, title))
    return figure


def checkpoints_figure(
    frame: pd.DataFrame,
    score: str,
    steps: Mapping[str, int | None],
    *,
    jobs: Mapping[str, str | None] | None = None,
    order: Sequence[str] | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
) -> Figure:
    """Each model's mean `score` (95% bootstrap interval of its samples) against its training
    step, a line per fine-tuning job (`jobs`: model → job; else per group) in its group's
    colour, on the score's scale. Models without a step are left out."""
    rows = []
    for (group, model), part in frame.groupby(["group", "model"], sort=False):
        step = steps.get(str(model))
        if step is None:
            continue
        interval = plain_bootstrap(pd.to_numeric(part[score], errors="coerce").to_numpy(float))
        if np.isnan(interval.mean):
            continue
        line = (jobs or {}).get(str(model)) or str(group)
        rows.append((str(group), line, int(step), interval.mean, interval.low, interval.high))
    if not rows:
        raise ValueError("no model with a training step has a valid score; pass steps=")
    table = pd.DataFrame(rows, columns=["group", "line", "step", "mean", "low", "high"])
    groups, styles = group_styles(table["group"], order)
    figure, axes = new_figure(9.5, 5.2)
    ax = axes[0][0]
    style_axes(ax)
    for group in groups:
        colour, marker = styles[group]
        for _, part in table[table["group"] == group].groupby("line", sort=False):
            by_step = part.sort_values("step")
            ax.plot(by_step["step"], by_step["mean"], color=colour, marker=marker, linewidth=1.4)
            ax.fill_between(
                by_step["step"],
                by_step["low"],
                by_step["high"],
                color=colour,
                alpha=0.15,
                linewidth=0,
            )
    legend(figure, group_handles(groups, styles, linestyle="-"))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(f"{wrap(score, 40, 1)} (mean, 95% CI)")
    scale_axis(ax, scale_for(score, scale), "y")
    figure_title(figure, title)
    return figure
