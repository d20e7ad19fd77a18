"""Shared look of every figure: a colour-blind-safe palette, markers that keep 20 groups apart,
and labels wrapped or shortened so long names stay legible.

Figures are built as `matplotlib.figure.Figure` objects, never through pyplot's global state:
nothing opens a window, nothing needs closing, and notebooks display the returned figure.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = [
    "OTHER",
    "OTHER_COLOUR",
    "colours",
    "legend_label",
    "markers",
    "new_figure",
    "shorten",
    "style_axes",
    "wrap",
]

OTHER = "[OTHER]"
OTHER_COLOUR = (0.78, 0.78, 0.78)
_MARKERS = ["o", "s", "D", "^", "v", "P", "X", "<", ">", "p"]
_HATCHES = ["", "//", "..", "xx", "\\\\", "oo"]


def colours(n: int) -> list[tuple[float, float, float]]:
    """`n` colours from seaborn's colour-blind palette (cycled past ten; pair them with
    `markers(n)` or `hatches(n)` so repeated colours stay distinguishable)."""
    base = sns.color_palette("colorblind", 10)
    return [tuple(base[i % 10]) for i in range(n)]


def markers(n: int) -> list[str]:
    """A marker per item; the marker changes each time the colours repeat (so each
    colour × marker pair is unique up to 100 items)."""
    return [_MARKERS[(i // 10) % len(_MARKERS)] for i in range(n)]


def hatches(n: int) -> list[str]:
    """A hatch per item: none for the first ten, then a new pattern per cycle of colours."""
    return [_HATCHES[(i // 10) % len(_HATCHES)] for i in range(n)]


def shorten(text: Any, limit: int = 40) -> str:
    """One line of at most `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)].rstrip() + "…"


def wrap(text: Any, width: int = 28, max_lines: int = 3) -> str:
    """Wrap a label onto at most `max_lines` lines of `width` characters."""
    flat = " ".join(str(text).split())
    lines = textwrap.wrap(flat, width=width, break_long_words=True) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = shorten(lines[-1] + " …", width)
    return "\n".join(lines)


def legend_label(text: Any, count: int) -> str:
    """A legend entry: wrapped onto two lines for a few entries, one short line for many."""
    return wrap(text, 28, 2) if count <= 12 else shorten(text, 34)


def new_figure(width: float, height: float, ncols: int = 1, nrows: int = 1) -> tuple[Figure, Any]:
    """A figure (constrained layout, unless `fit_margins` replaces it) and its axes, with
    seaborn's clean style applied."""
    with sns.axes_style("whitegrid"), sns.plotting_context("notebook", font_scale=0.9):
        figure = Figure(figsize=(width, height), layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False)
    return figure, axes


def style_axes(ax: Axes) -> None:
    ax.grid(True, axis="both", color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def figure_title(figure: Figure, title: str | None, subtitle: Sequence[str] = ()) -> Text | None:
    """The figure's title (wrapped onto two lines at most), if it has one."""
    if title:
        return figure.suptitle(wrap(title, 90, 2), fontsize=11, fontweight="bold")
    return None
