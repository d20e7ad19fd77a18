"""The look every figure shares: a colour and marker per group, wrapped or shortened labels, a
legend on the right, and intervals drawn as a few collections."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

import matplotlib as mpl
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from evals.plots._layout import FittedMargins

OTHER = "[OTHER]"
OTHER_COLOUR = (0.78, 0.78, 0.78)
_MARKERS = ["o", "s", "D", "^", "v", "P", "X", "<", ">", "p"]
_HATCHES = ["", "//", "..", "xx", "\\\\", "oo"]
Colour = tuple[float, float, float]
GroupStyle = tuple[Colour, str]
"""A group's colour and marker."""
IntervalPoint = tuple[float, float, float, float, GroupStyle, bool]
"""(position, value, low, high, style, filled) of one marker with its interval."""


@cache
def _palette() -> list[Colour]:
    return [tuple(c) for c in sns.color_palette("colorblind", 10)]


def colours(n: int) -> list[Colour]:
    """`n` colours of seaborn's colour-blind palette, cycled past ten."""
    return [_palette()[i % 10] for i in range(n)]


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


@cache
def _look() -> Any:
    """Seaborn's whitegrid style in its notebook context at 0.9, computed once per process."""
    return {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=0.9)}


def new_figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Axes]]:
    """A figure with constrained layout and its row of `ncols` axes in seaborn's clean style,
    light grid lines and no top or right spine."""
    with mpl.rc_context(_look()):
        figure = Figure(figsize=(width, height), layout="constrained")
        axes = list(figure.subplots(1, ncols, squeeze=False)[0])
    for ax in axes:
        ax.grid(True, axis="both", color="#e5e5e5", linewidth=0.8)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return figure, axes


def group_handles(
    groups: Sequence[str], styles: dict[str, GroupStyle], linestyle: Any = "", **options: Any
) -> list[Line2D]:
    """A legend entry per group in its colour and marker (on two lines for a few entries, one
    short line for many)."""
    return [
        Line2D(
            [],
            [],
            color=styles[g][0],
            marker=styles[g][1],
            linestyle=linestyle,
            label=wrap(g, 28, 2) if len(groups) <= 12 else shorten(g, 34),
            **options,
        )
        for g in groups
    ]


def note_handle(label: str, **options: Any) -> Line2D:
    """A grey legend entry explaining a marker (hollow: `markerfacecolor="white"`)."""
    return Line2D([], [], color="#444444", marker="o", linestyle="", label=label, **options)


def finish(
    figure: Figure,
    handles: list[Any],
    title: str | None,
    *,
    legend_title: str | None = "group",
    fitted: bool = False,
) -> Figure:
    """The figure's legend right of the panels (two columns past 24 entries), its title on
    two lines at most, and with `fitted` its margins fitted to the labels (`FittedMargins`)."""
    if handles:
        figure.legend(
            handles=handles,
            loc="outside right upper",
            title=legend_title,
            fontsize=8,
            frameon=False,
            ncols=1 if len(handles) <= 24 else 2,
        )
    text = figure.suptitle(wrap(title, 90, 2), fontsize=11, fontweight="bold") if title else None
    if fitted:
        figure.set_layout_engine(FittedMargins(text))
    return figure


def draw_intervals(
    ax: Axes,
    points: Sequence[IntervalPoint],
    *,
    horizontal: bool = False,
    markersize: float = 6.0,
    linewidth: float = 1.4,
    capsize: float = 3.0,
    alpha: float = 1.0,
    zorder: float = 2.0,
) -> list[IntervalPoint]:
    """Markers with their intervals as a few collections (bars, caps, a scatter per marker)
    rather than an `errorbar` per point, which costs a dozen artists each (their gids:
    `intervals`, `interval-caps`, `markers`). A missing bound draws no bar on its side, a
    missing value nothing; returns the points drawn."""
    drawn = [p for p in points if not math.isnan(p[1])]

    def at(position: float, value: float) -> tuple[float, float]:
        return (value, position) if horizontal else (position, value)

    bars, caps, bar_colours = [], [], []
    for position, value, low, high, (colour, _), _ in drawn:
        if not (math.isnan(low) and math.isnan(high)):
            start = value if math.isnan(low) else min(low, value)
            end = value if math.isnan(high) else max(high, value)
            bars.append([at(position, start), at(position, end)])
            caps += [at(position, start), at(position, end)]
            bar_colours.append(colour)
    common: dict[str, Any] = {"alpha": alpha, "clip_on": False, "zorder": zorder}
    if bars:
        ax.add_collection(
            LineCollection(
                bars, colors=bar_colours, linewidths=linewidth, gid="intervals", **common
            )
        )
        x, y = zip(*caps, strict=True)
        ax.scatter(
            x,
            y,
            s=(2 * capsize) ** 2,
            marker="|" if horizontal else "_",
            gid="interval-caps",
            c=[c for c in bar_colours for _ in (0, 1)],
            linewidths=1.0,
            **common,
        )
    for marker in dict.fromkeys(p[4][1] for p in drawn):
        mine = [p for p in drawn if p[4][1] == marker]
        x, y = zip(*(at(p[0], p[1]) for p in mine), strict=True)
        ax.scatter(
            x,
            y,
            s=markersize**2,
            marker=marker,
            facecolors=[p[4][0] if p[5] else "white" for p in mine],
            edgecolors=[p[4][0] for p in mine],
            linewidths=1.0,
            gid="markers",
            **{**common, "zorder": zorder + 0.1},
        )
    return drawn
