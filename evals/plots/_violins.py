"""Violins drawn with numpy (a Gaussian kernel density with Scott's bandwidth, cut to the data,
quartiles dashed), a panel's violins one `PolyCollection`."""

from __future__ import annotations

import colorsys
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection

VIOLIN_WIDTH = 0.8
"""The widest a violin gets, in rows."""
GRID_POINTS = 100
"""Points along each violin's outline (seaborn's default)."""
_CHUNK = 4096
"""Distinct values summed at a time (bounds the memory of a large row)."""
_LINE_WIDTH = 0.8
_SATURATION = 0.75
_QUARTILE_DASHES = ((1.25, 0.75), (2.5, 1.0), (1.25, 0.75))
"""First quartile, median, third quartile (in line widths)."""

ViolinDensity = tuple[np.ndarray, np.ndarray]
"""The values a violin spans (ascending) and the estimated density at each."""


def violin_density(values: np.ndarray, points: int = GRID_POINTS) -> ViolinDensity | None:
    """The kernel density of `values` at `points` from their minimum to their maximum; None
    when they do not vary."""
    finite = values[np.isfinite(values)]
    count = len(finite)
    spread = float(finite.std(ddof=1)) if count >= 2 else 0.0
    if not spread > 0:
        return None
    bandwidth = spread * count ** (-1 / 5)
    support = np.linspace(finite.min(), finite.max(), points)
    distinct, weights = np.unique(finite, return_counts=True)
    density = np.zeros(points)
    for start in range(0, len(distinct), _CHUNK):
        offsets = (support[:, None] - distinct[None, start : start + _CHUNK]) / bandwidth
        density += np.exp(-0.5 * offsets * offsets) @ weights[start : start + _CHUNK]
    density /= count * bandwidth * math.sqrt(2 * math.pi)
    return support, density


def draw_violins(
    ax: Axes, rows: Sequence[np.ndarray], palette: Sequence[tuple[float, float, float]]
) -> None:
    """A horizontal violin per row of values (row i at y = i, in `palette[i]`); a row that
    does not vary is a line at its value, an empty row nothing. Sets no limits."""
    fills = [sns.desaturate(colour, _SATURATION) for colour in palette]
    grey = min(colorsys.rgb_to_hls(*colour)[1] for colour in palette) * 0.6
    edge = (grey, grey, grey)  # seaborn's outline: 60% of the darkest colour's lightness
    bodies: list[np.ndarray] = []
    body_fills: list[tuple[float, float, float]] = []
    quartiles: list[np.ndarray] = []
    flat: list[np.ndarray] = []
    for y, values in enumerate(rows):
        finite = values[np.isfinite(values)]
        if not len(finite):
            continue
        estimate = violin_density(finite)
        if estimate is None:
            value = float(finite[0])
            flat.append(np.array([[value, y - VIOLIN_WIDTH / 2], [value, y + VIOLIN_WIDTH / 2]]))
            continue
        support, density = estimate
        half = density / density.max() * VIOLIN_WIDTH / 2
        bodies.append(
            np.column_stack([np.r_[support, support[::-1]], np.r_[y - half, (y + half)[::-1]]])
        )
        body_fills.append(fills[y])
        for value in np.percentile(finite, [25, 50, 75]):
            reach = float(np.interp(value, support, half))
            quartiles.append(np.array([[value, y - reach], [value, y + reach]]))
    line: dict[str, Any] = {"edgecolors": edge, "linewidths": _LINE_WIDTH}
    styles = [(0.0, dashes) for dashes in _QUARTILE_DASHES] * (len(quartiles) // 3)
    for collection in (
        PolyCollection(bodies, facecolors=body_fills, zorder=1, **line) if bodies else None,
        LineCollection(quartiles, linestyles=styles, zorder=2, **line) if quartiles else None,
        LineCollection(flat, zorder=2, **line) if flat else None,
    ):
        if collection is not None:
            ax.add_collection(collection, autolim=False)
