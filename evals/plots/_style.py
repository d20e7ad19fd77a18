"""The look every figure shares: one colour and marker per group, decided once from the run's
groups in order, labels wrapped or shortened, and a legend on the right.

Figures are `matplotlib.figure.Figure` objects, never pyplot's global state: nothing opens a
window and nothing needs closing.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

__all__ = [
    "OTHER",
    "OTHER_COLOUR",
    "Colour",
    "GroupStyle",
    "colours",
    "figure_title",
    "group_handles",
    "group_styles",
    "hatches",
    "interval_point",
    "legend",
    "legend_label",
    "new_figure",
    "note_handle",
    "shorten",
    "style_axes",
    "wrap",
]

OTHER = "[OTHER]"
OTHER_COLOUR = (0.78, 0.78, 0.78)
_MARKERS = ["o", "s", "D", "^", "v", "P", "X", "<", ">", "p"]
_HATCHES = ["", "//", "..", "xx", "\\\\", "oo"]
Colour = tuple[float, float, float]
GroupStyle = tuple[Colour, str]
"""A group's colour and marker."""


def colours(n: int) -> list[Colour]:
    """`n` colours of seaborn's colour-blind palette, cycled past ten."""
    base = sns.color_palette("colorblind", 10)
    return [tuple(base[i % 10]) for i in range(n)]


def hatches(n: int) -> list[str]:
    """A hatch per item: none for the first ten, then a new pattern per cycle of colours."""
    return [_HATCHES[(i // 10) % len(_HATCHES)] for i in range(n)]


def group_styles(
    present: Iterable[object], order: Sequence[str] | None = None
) -> tuple[list[str], dict[str, GroupStyle]]:
    """The groups to draw (those of `order` that are `present`, else `present` in order) and
    each group's style, by its place in `order` followed by the groups it does not name: a
    figure given the run's groups colours a group alike whichever groups it leaves out. The
    marker changes each time the colours repeat."""
    found = list(dict.fromkeys(str(g) for g in present))
    shown = [g for g in order if g in found] if order is not None else found
    everyone = list(dict.fromkeys([*(order or []), *found]))
    palette = colours(len(everyone))
    styles = {g: (palette[i], _MARKERS[(i // 10) % len(_MARKERS)]) for i, g in enumerate(everyone)}
    return shown, styles


def shorten(text: Any, limit: int = 40) -> str:
    """One line of at most `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)].rstrip() + "…"


def wrap(text: Any, width: int = 28, max_lines: int = 3) -> str:
    """A label on at most `max_lines` lines of `width` characters."""
    flat = " ".join(str(text).split())
    lines = textwrap.wrap(flat, width=width, break_long_words=True) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = shorten(lines[-1] + " …", width)
    return "\n".join(lines)


def legend_label(text: Any, count: int) -> str:
    """A legend entry: on two lines for a few entries, one short line for many."""
    return wrap(text, 28, 2) if count <= 12 else shorten(text, 34)


def new_figure(width: float, height: float, ncols: int = 1, nrows: int = 1) -> tuple[Figure, Any]:
    """A figure with constrained layout and its grid of axes, in seaborn's clean style."""
    with sns.axes_style("whitegrid"), sns.plotting_context("notebook", font_scale=0.9):
        figure = Figure(figsize=(width, height), layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False)
    return figure, axes


def style_axes(ax: Axes) -> None:
    ax.grid(True, axis="both", color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def figure_title(figure: Figure, title: str | None) -> Text | None:
    """The figure's title (on two lines at most), if it has one."""
    if title:
        return figure.suptitle(wrap(title, 90, 2), fontsize=11, fontweight="bold")
    return None


def group_handles(
    groups: Sequence[str], styles: dict[str, GroupStyle], linestyle: Any = "", **options: Any
) -> list[Line2D]:
    """A legend entry per group in its colour and marker."""
    return [
        Line2D(
            [],
            [],
            color=styles[g][0],
            marker=styles[g][1],
            linestyle=linestyle,
            label=legend_label(g, len(groups)),
            **options,
        )
        for g in groups
    ]


def note_handle(label: str, **options: Any) -> Line2D:
    """A grey legend entry explaining a marker (hollow: `markerfacecolor="white"`)."""
    return Line2D([], [], color="#444444", marker="o", linestyle="", label=label, **options)


def legend(figure: Figure, handles: list[Any], title: str | None = "group") -> None:
    """The figure's legend, right of the panels (two columns past 24 entries)."""
    if handles:
        figure.legend(
            handles=handles,
            loc="outside right upper",
            title=title,
            fontsize=8,
            frameon=False,
            ncols=1 if len(handles) <= 24 else 2,
        )


def interval_point(
    ax: Axes,
    position: float,
    value: float,
    low: float,
    high: float,
    style: GroupStyle,
    *,
    horizontal: bool = False,
    filled: bool = True,
    **options: Any,
) -> bool:
    """A marker at `value` with its interval (none on the side of a missing bound), at
    `position` along the other axis; False when the value is missing (nothing drawn)."""
    if math.isnan(value):
        return False
    below = 0.0 if math.isnan(low) else max(value - low, 0.0)
    above = 0.0 if math.isnan(high) else max(high - value, 0.0)
    error = None if math.isnan(low) and math.isnan(high) else [[below], [above]]
    colour, marker = style
    ax.errorbar(
        value if horizontal else position,
        position if horizontal else value,
        xerr=error if horizontal else None,
        yerr=None if horizontal else error,
        fmt=marker,
        color=colour,
        markerfacecolor=colour if filled else "white",
        markeredgecolor=colour,
        clip_on=False,
        **{"capsize": 3, "linewidth": 1.4, **options},
    )
    return True
