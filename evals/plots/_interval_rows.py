"""Panels of points with intervals, one panel per score and one row per question × group: the
layout the means figure and the comparison figure share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from evals.plots._axes import repeat_on_top
from evals.plots._layout import fit_margins
from evals.plots._style import colours, figure_title, markers, new_figure, style_axes, wrap

__all__ = ["IntervalColumns", "interval_panels", "ordered"]


def ordered(values: pd.Series, wanted: Sequence[str] | None) -> list[str]:
    """The distinct values in order of appearance, or those of `wanted` that appear."""
    present = list(dict.fromkeys(values.astype(str)))
    return [v for v in wanted if v in present] if wanted is not None else present


@dataclass(frozen=True)
class IntervalColumns:
    """Which columns hold the point and its interval, and how to draw the value axis."""

    value: str
    low: str
    high: str
    axis: Callable[[Axes, str, pd.DataFrame], None]
    """Sets a panel's value axis from its score and rows."""
    label: str
    filled: Callable[[pd.Series], bool] | None = None
    """Whether a row's marker is filled (default: all are)."""
    reference: float | None = None
    """A value marked by a vertical line (0 for differences)."""
    legend_notes: tuple[Line2D, ...] = ()


def interval_panels(
    table: pd.DataFrame,
    columns: IntervalColumns,
    *,
    questions: list[str],
    scores: list[str],
    groups: list[str],
    title: str | None,
) -> Figure:
    """One panel per score. With one question the groups are the rows; with several, each
    question is a block of rows and groups are told apart by colour and marker (legend on
    the right). Tall figures repeat the value axis on top."""
    single = len(questions) == 1
    block = len(groups) + 1
    rows = len(groups) if single else len(questions) * block
    height = max(2.4, 0.27 * rows + 1.3)
    width = min(4.2 * len(scores) + (0 if single else 2.6), 22)
    figure, axes = new_figure(width, height, ncols=len(scores))
    palette, shapes = colours(len(groups)), markers(len(groups))
    table = table.assign(question=table["question"].astype(str), group=table["group"].astype(str))
    for panel, score in enumerate(scores):
        ax = axes[0][panel]
        style_axes(ax)
        part = table[table["score"] == score]
        ticks: list[float] = []
        labels: list[str] = []
        for qi, question in enumerate(questions):
            rows_of_question = part[part["question"] == question]
            base = 0 if single else qi * block
            for gi, group in enumerate(groups):
                y = base + gi
                if single:
                    ticks.append(y)
                    labels.append(wrap(group, 30, 2))
                row = rows_of_question[rows_of_question["group"] == group]
                if not row.empty:
                    _point(ax, row.iloc[0], y, columns, palette[gi], shapes[gi])
            if not single:
                ticks.append(base + (len(groups) - 1) / 2)
                labels.append(wrap(question, 26, 3))
        ax.set_yticks(ticks, labels)
        last = len(groups) - 1 + (0 if single else (len(questions) - 1) * block)
        ax.set_ylim(last + 0.8, -0.8)
        if not single:
            for qi in range(1, len(questions), 2):
                start = qi * block - 0.5
                ax.axhspan(start, start + len(groups), color="#f3f3f3", zorder=0)
        if columns.reference is not None:
            ax.axvline(columns.reference, color="#444444", linewidth=1.0, zorder=1)
        ax.set_title(wrap(score, 40, 2), fontsize=10)
        ax.set_xlabel(columns.label)
        columns.axis(ax, score, part)
        repeat_on_top(ax, height)
        if panel > 0 and not single:
            ax.set_yticklabels([])
    handles = [] if single else _group_handles(groups, palette, shapes)
    handles += list(columns.legend_notes)
    if handles:
        figure.legend(
            handles=handles,
            loc="outside right upper",
            title=None if single else "group",
            fontsize=8,
            frameon=False,
            ncols=1 if len(handles) <= 24 else 2,
        )
    fit_margins(
        figure,
        figure_title(figure, title if title is not None else (questions[0] if single else None)),
    )
    return figure


def _point(
    ax: Axes,
    row: pd.Series,
    y: float,
    columns: IntervalColumns,
    colour: tuple[float, float, float],
    shape: str,
) -> None:
    value = float(row[columns.value])
    if np.isnan(value):
        return
    low, high = float(row[columns.low]), float(row[columns.high])
    below = 0.0 if np.isnan(low) else max(value - low, 0.0)
    above = 0.0 if np.isnan(high) else max(high - value, 0.0)
    filled = columns.filled(row) if columns.filled is not None else True
    ax.errorbar(
        value,
        y,
        xerr=[[below], [above]],
        fmt=shape,
        color=colour,
        markerfacecolor=colour if filled else "white",
        markeredgecolor=colour,
        markersize=6,
        capsize=3,
        linewidth=1.6,
        clip_on=False,
    )


def _group_handles(
    groups: list[str], palette: list[tuple[float, float, float]], shapes: list[str]
) -> list[Line2D]:
    return [
        Line2D([], [], color=palette[i], marker=shapes[i], linestyle="", label=wrap(g, 28, 2))
        for i, g in enumerate(groups)
    ]
