"""Margins fitted to a figure's labels at drawing time (`FittedMargins`): lighter than
constrained layout, each label measured once per process (docs/design/report.md)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, cast

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import LayoutEngine
from matplotlib.text import Text

_POINTS = 72.0
_EDGE = 4.0
"""Space between the outermost label and the figure's edge (points)."""
_GAP = 8.0
"""Space between one panel's labels and the next panel's (points)."""
_TITLE_GAP = 6.0
"""Space between the figure's title and the panels' labels below it (points)."""

_Font = tuple[tuple[str, ...], str, str, str | int, str | int, float]


@lru_cache(maxsize=4)
def _ruler(dpi: float) -> tuple[Text, RendererBase]:
    """A text on a canvas of its own at `dpi`."""
    figure = Figure(dpi=dpi)
    return figure.text(0, 0, ""), FigureCanvasAgg(figure).get_renderer()


@lru_cache(maxsize=8192)
def _measure(text: str, font: _Font, rotation: float, dpi: float) -> tuple[float, float]:
    """Width and height (points) of `text` drawn at `dpi`."""
    family, style, variant, weight, stretch, size = font
    ruler, renderer = _ruler(dpi)
    ruler.set_text(text)
    ruler.set_rotation(rotation)
    ruler.set_fontproperties(
        FontProperties(
            family=list(family),
            style=cast(Any, style),
            variant=cast(Any, variant),
            weight=weight,
            stretch=stretch,
            size=size,
        )
    )
    box = ruler.get_window_extent(renderer)
    return float(box.width) * _POINTS / dpi, float(box.height) * _POINTS / dpi


def _size(text: Text, dpi: float) -> tuple[float, float]:
    """Width and height on the page (points) of a text as drawn; 0 if hidden or empty."""
    if not text.get_visible() or not text.get_text():
        return 0.0, 0.0
    font = text.get_fontproperties()
    key: _Font = (
        tuple(font.get_family()),
        font.get_style(),
        font.get_variant(),
        font.get_weight(),
        font.get_stretch(),
        font.get_size_in_points(),
    )
    return _measure(text.get_text(), key, text.get_rotation(), dpi)


def _tick_labels(
    axis: Axis, dpi: float
) -> tuple[list[tuple[float, float]], list[tuple[float, float]], float]:
    """The sizes of an axis's tick labels on its first and second side, and their pad."""
    axis.get_majorticklabels()  # sets the labels' texts
    ticks = axis.get_major_ticks()
    if not ticks:
        return [], [], 0.0
    first = [_size(t.label1, dpi) for t in ticks]
    second = [_size(t.label2, dpi) for t in ticks]
    pad: float = cast(Any, ticks[0]).get_pad()  # typed as returning None, but returns it
    return first, second, pad + ticks[0].get_tick_padding()


def _depth(sizes: list[tuple[float, float]], along: int, pad: float) -> float:
    deepest = max((size[along] for size in sizes), default=0.0)
    return deepest + pad if deepest else 0.0


def _overhang(sizes: list[tuple[float, float]], across: int) -> float:
    return max((size[across] for size in sizes), default=0.0) / 2


def _axis_label(axis: Axis, along: int, dpi: float) -> float:
    size = _size(axis.get_label(), dpi)[along]
    return size + axis.labelpad if size else 0.0


def _room(ax: Axes, dpi: float) -> tuple[float, float, float, float]:
    """What one panel's labels need left, right, below and above it (points)."""
    bottom, top, x_pad = _tick_labels(ax.xaxis, dpi)
    left, right, y_pad = _tick_labels(ax.yaxis, dpi)
    above = _depth(top, 1, x_pad)
    title = _size(ax.title, dpi)[1]
    if title:
        above += _place_title(ax, above) + title
    wide, tall = _overhang(bottom + top, 0), _overhang(left + right, 1)
    x_label, y_label = _axis_label(ax.xaxis, 1, dpi), _axis_label(ax.yaxis, 0, dpi)
    x_top = ax.xaxis.get_label_position() == "top"
    y_right = ax.yaxis.get_label_position() == "right"
    return (
        max(_depth(left, 0, y_pad), wide) + (0.0 if y_right else y_label),
        max(_depth(right, 0, y_pad), wide) + (y_label if y_right else 0.0),
        max(_depth(bottom, 1, x_pad), tall) + (0.0 if x_top else x_label),
        max(above, tall) + (x_label if x_top else 0.0),
    )


def _place_title(ax: Axes, labels: float) -> float:
    """Put the panel's title above its top tick labels (`labels` points deep), where
    matplotlib's costlier automatic placement would; its distance from the panel (points)."""
    pad = labels + mpl.rcParams["axes.titlepad"]
    title = ax.title
    ax.set_title(
        title.get_text(),
        pad=pad,
        y=1.0,
        fontproperties=title.get_fontproperties().copy(),  # set_title resets the original
        color=title.get_color(),
    )
    return pad


class FittedMargins(LayoutEngine):
    """Places the grid of panels at each draw so every label fits, `title` (the figure's)
    above and the legends right of them, level with the panels' tops."""

    _adjust_compatible = True
    _colorbar_gridspec = True

    def __init__(self, title: Text | None = None) -> None:
        super().__init__()
        self._title = title

    def execute(self, fig: Figure) -> None:
        _fit(fig, self._title)


def lay_out(figure: Figure, dpi: float) -> None:
    """Fit `figure`'s margins now, at the `dpi` it will be saved at, and drop its engine: saving
    a figure that has a layout engine draws it twice, once only to lay it out."""
    engine = figure.get_layout_engine()
    if isinstance(engine, FittedMargins):
        figure.set_dpi(dpi)
        engine.execute(figure)
        figure.set_layout_engine(None)


def _fit(figure: Figure, title: Text | None) -> None:
    panels = [ax for ax in figure.axes if ax.get_subplotspec() is not None]
    if not panels:
        return
    dpi = float(figure.dpi)
    spec = panels[0].get_subplotspec()
    assert spec is not None
    rows, columns = spec.get_gridspec().get_geometry()
    left, right = [0.0] * columns, [0.0] * columns
    top, bottom = [0.0] * rows, [0.0] * rows
    for ax in panels:
        where = ax.get_subplotspec()
        assert where is not None
        needs_left, needs_right, needs_bottom, needs_top = _room(ax, dpi)
        first, last = where.colspan.start, where.colspan.stop - 1
        left[first], right[last] = max(left[first], needs_left), max(right[last], needs_right)
        first, last = where.rowspan.start, where.rowspan.stop - 1
        top[first], bottom[last] = max(top[first], needs_top), max(bottom[last], needs_bottom)
    width, height = (float(v) * _POINTS for v in figure.get_size_inches())
    renderer = _ruler(dpi)[1]
    widest = max((one.get_window_extent(renderer).width for one in figure.legends), default=0.0)
    legend = widest * _POINTS / dpi
    above = top[0] + _EDGE
    if title is not None and title.get_text():
        title.set_y(1 - _EDGE / height)  # its top, as matplotlib aligns a figure's title
        above += _size(title, dpi)[1] + _TITLE_GAP
    margins = {
        "left": (left[0] + _EDGE) / width,
        "right": 1 - (right[-1] + _EDGE + (legend + _GAP if legend else 0.0)) / width,
        "bottom": (bottom[-1] + _EDGE) / height,
        "top": 1 - above / height,
    }
    gap_x = max((right[c] + left[c + 1] for c in range(columns - 1)), default=0.0) + _GAP
    gap_y = max((bottom[r] + top[r + 1] for r in range(rows - 1)), default=0.0) + _GAP
    panel_width = ((margins["right"] - margins["left"]) * width - (columns - 1) * gap_x) / columns
    panel_height = ((margins["top"] - margins["bottom"]) * height - (rows - 1) * gap_y) / rows
    figure.subplots_adjust(
        **margins, wspace=gap_x / max(panel_width, 1.0), hspace=gap_y / max(panel_height, 1.0)
    )
    for one in figure.legends:  # its top level with the panels' top, below the title
        one.set_bbox_to_anchor((1.0, margins["top"]), transform=figure.transFigure)
