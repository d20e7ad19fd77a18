"""Scores against each other and against training: two judges in one scatter coloured by
group, and a score along the checkpoints of each fine-tuning job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from evals.plots._axes import ScaleArgument, scale_axis, scale_for
from evals.plots._style import finish, group_handles, group_styles, new_figure, wrap
from evals.stats import DEFAULT_SEED, plain_bootstrap

MAX_SCATTER_POINTS = 20_000
"""Points drawn at most (an evenly seeded subsample beyond); group means use every row."""


def scatter_figure(
    frame: pd.DataFrame,
    x: str,
    y: str,
    *,
    order: Sequence[str] | None = None,
    title: str | None = None,
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
    many = len(data) > MAX_SCATTER_POINTS
    shown = data.sample(n=MAX_SCATTER_POINTS, random_state=DEFAULT_SEED) if many else data
    figure, (ax,) = new_figure(9.5, 6.2)
    alpha = float(np.clip(30 / np.sqrt(len(shown)), 0.08, 0.7))
    rank = shown["group"].map({g: i for i, g in enumerate(groups)}).to_numpy()
    shown = shown.iloc[np.argsort(rank, kind="stable")]  # each group over the one before
    means = data.groupby("group")[["x", "y"]].mean()
    for marker in dict.fromkeys(styles[g][1] for g in groups):  # one collection per marker
        mine = [g for g in groups if styles[g][1] == marker]
        part = shown[shown["group"].isin(mine)]
        colour = [styles[g][0] for g in part["group"]]
        options: dict[str, Any] = {"s": 10, "alpha": alpha, "linewidths": 0, "rasterized": True}
        ax.scatter(part["x"], part["y"], c=colour, marker=marker, **options)
        ax.scatter(
            means.loc[mine, "x"],
            means.loc[mine, "y"],
            s=110,
            c=[styles[g][0] for g in mine],
            marker=marker,
            edgecolors="black",
            linewidths=1.2,
            zorder=4,
        )
    ax.set_xlabel(wrap(x, 50, 1))
    ax.set_ylabel(wrap(y, 50, 1))
    scale_axis(ax, scale_for(x, scale), "x")
    scale_axis(ax, scale_for(y, scale), "y")
    handles = group_handles(groups, styles, markersize=7)
    return finish(figure, handles, title, legend_title="group (mean: large)", fitted=True)


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
    figure, (ax,) = new_figure(9.5, 5.2)
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
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(f"{wrap(score, 40, 1)} (mean, 95% CI)")
    scale_axis(ax, scale_for(score, scale), "y")
    return finish(figure, group_handles(groups, styles, linestyle="-"), title)
