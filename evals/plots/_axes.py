"""Value axes on the score's true scale: a 0–100 judge runs 0–100 and a share 0–1 whatever the
data's spread, panels of one scale share their limits, differences run over ± the scale's
width, and tall figures repeat the value axis on top so every row has a scale in reach."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.ticker import MaxNLocator

from evals.stats import Scale, score_scale

__all__ = [
    "TALL_INCHES",
    "ScaleArgument",
    "difference_axis",
    "repeat_on_top",
    "scale_axis",
    "scale_for",
    "summary_scale",
]

TALL_INCHES = 7.0
"""Figures taller than this repeat their value axis on top."""
TICK_SIZE = 9
MINOR_GRID = "#f0f0f0"
ScaleArgument = Scale | Mapping[str, Scale] | None
"""One scale for every panel, a scale per score name, or None (each score's own)."""


def scale_for(score: str, given: ScaleArgument, fallback: Scale | None = None) -> Scale:
    """The scale `given` for `score`, else `fallback`, else the score's default."""
    if isinstance(given, Scale):
        return given
    if given is not None and score in given:
        return given[score]
    return fallback if fallback is not None else score_scale(score)


def summary_scale(rows: pd.DataFrame) -> Scale | None:
    """The range recorded in a summary's or comparison table's rows (`scale_low`,
    `scale_high`), if they record one (tables written before they did do not)."""
    if not {"scale_low", "scale_high"} <= set(rows.columns) or rows.empty:
        return None
    low, high = float(rows["scale_low"].iloc[0]), float(rows["scale_high"].iloc[0])
    if math.isnan(low) or math.isnan(high) or low >= high:
        return None
    return Scale(low, high)


def _ticks(ax: Axes, axis: Literal["x", "y"], low: float, high: float) -> None:
    """Round major ticks, and a fainter grid line halfway between them (drawn as one
    collection, not as minor ticks: a tick is several artists, measured at every draw)."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    locator = MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10])
    target.set_major_locator(locator)
    ax.tick_params(axis=axis, which="major", labelsize=TICK_SIZE)
    majors = [float(t) for t in locator.tick_values(low, high) if low <= t <= high]
    if len(majors) < 2:
        return
    step = majors[1] - majors[0]
    halves = np.arange(majors[0] - step / 2, high, step)
    halves = halves[(halves > low) & (halves < high)]
    lines = [[(v, 0.0), (v, 1.0)] if axis == "x" else [(0.0, v), (1.0, v)] for v in halves]
    transform = ax.get_xaxis_transform() if axis == "x" else ax.get_yaxis_transform()
    minor = LineCollection(lines, colors=MINOR_GRID, linewidths=0.6, transform=transform)
    minor.set_zorder(0.4)  # behind the data, with the major grid lines (0.5)
    ax.add_collection(minor, autolim=False)


def scale_axis(ax: Axes, scale: Scale, axis: Literal["x", "y"] = "x") -> None:
    """Limits exactly the scale's range, with round ticks."""
    if axis == "x":
        ax.set_xlim(scale.low, scale.high)
    else:
        ax.set_ylim(scale.low, scale.high)
    _ticks(ax, axis, scale.low, scale.high)


def difference_axis(ax: Axes, scale: Scale, axis: Literal["x", "y"] = "x") -> None:
    """Limits ± the scale's width (the largest possible difference), with round ticks."""
    if axis == "x":
        ax.set_xlim(-scale.width, scale.width)
    else:
        ax.set_ylim(-scale.width, scale.width)
    _ticks(ax, axis, -scale.width, scale.width)


def repeat_on_top(ax: Axes, height: float) -> None:
    """In a figure taller than `TALL_INCHES`, tick labels on the top edge as well."""
    if height > TALL_INCHES:
        ax.tick_params(axis="x", which="both", top=True, labeltop=True)
        ax.spines["top"].set_visible(True)
