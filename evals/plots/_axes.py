"""Value axes on the score's scale whatever the data's spread (a 0–100 judge on 0–100, a share
on 0–1; differences on ± the scale's width); tall figures repeat the value axis on top."""

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
    """The range a summary's or comparison table's rows record, if any."""
    if not {"scale_low", "scale_high"} <= set(rows.columns) or rows.empty:
        return None
    low, high = float(rows["scale_low"].iloc[0]), float(rows["scale_high"].iloc[0])
    if math.isnan(low) or math.isnan(high) or low >= high:
        return None
    return Scale(low, high)


def _ticks(ax: Axes, axis: Literal["x", "y"], low: float, high: float) -> None:
    """Round major ticks, and a fainter grid line halfway between them (one collection, not
    minor ticks: a tick is several artists, measured at every draw)."""
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


def scale_axis(
    ax: Axes, scale: Scale, axis: Literal["x", "y"] = "x", *, difference: bool = False
) -> None:
    """Limits exactly the scale's range (with `difference`: ± its width), round ticks."""
    low, high = (-scale.width, scale.width) if difference else (scale.low, scale.high)
    (ax.set_xlim if axis == "x" else ax.set_ylim)(low, high)
    _ticks(ax, axis, low, high)


def repeat_on_top(ax: Axes, height: float) -> None:
    """In a figure taller than `TALL_INCHES`, tick labels on the top edge as well."""
    if height > TALL_INCHES:
        ax.tick_params(axis="x", which="both", top=True, labeltop=True)
        ax.spines["top"].set_visible(True)
