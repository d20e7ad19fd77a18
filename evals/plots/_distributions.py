"""Distributions per group: shares of free-form answers and next-token probabilities as
stacked bars (rare answers folded into `[OTHER]`), and score distributions as violins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from evals.plots._axes import ScaleArgument, repeat_on_top, scale_axis, scale_for
from evals.plots._style import (
    OTHER,
    OTHER_COLOUR,
    colours,
    finish,
    group_styles,
    hatches,
    new_figure,
    shorten,
    wrap,
)
from evals.plots._violins import draw_violins
from evals.stats import SHARE

DEFAULT_MAX_ANSWERS = 12
"""Without `min_fraction` or `selected_answers`, the most common answers shown (rest: OTHER)."""


def answer_shares(
    frame: pd.DataFrame,
    *,
    min_fraction: float | None = None,
    selected_answers: Sequence[str] | None = None,
    order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Share of each answer per group (rows: groups, columns: answers, `[OTHER]` last).

    Text answers are counted; next-token distributions (dicts) averaged. An answer is kept
    when its share reaches `min_fraction` in a group, or it is one of `selected_answers`
    (default: the 12 most common); the rest are summed into `[OTHER]`."""
    if min_fraction is not None and selected_answers is not None:
        raise ValueError("give min_fraction or selected_answers, not both")
    groups, _ = group_styles(frame["group"], order)
    table: dict[str, dict[str, float]] = {}
    for group in groups:
        values = frame.loc[frame["group"].astype(str) == group, "answer"].tolist()
        distributions = [v for v in values if isinstance(v, Mapping)]
        if distributions:  # a missing token counts as 0
            tokens = pd.DataFrame([{str(k): float(p) for k, p in v.items()} for v in distributions])
            table[group] = {str(k): float(v) for k, v in tokens.fillna(0.0).mean().items()}
        else:
            texts = pd.Series([v for v in values if isinstance(v, str)], dtype=object)
            counts = texts.value_counts(normalize=True) if len(texts) else pd.Series(dtype=float)
            table[group] = {str(k): float(v) for k, v in counts.items()}
    shares = pd.DataFrame.from_dict(table, orient="index").reindex(groups).fillna(0.0)
    if shares.empty:
        return shares
    ranked = shares.mean(axis=0).sort_values(ascending=False, kind="stable").index.tolist()
    if selected_answers is not None:
        keep = [a for a in selected_answers if a in shares.columns]
    elif min_fraction is not None:
        peak = shares.max(axis=0)
        keep = [a for a in ranked if peak[a] >= min_fraction]
    else:
        keep = ranked[:DEFAULT_MAX_ANSWERS] if len(ranked) > DEFAULT_MAX_ANSWERS + 1 else ranked
    result = shares[keep].copy()
    rest = shares.drop(columns=keep).sum(axis=1)
    if (rest > 1e-12).any():
        result[OTHER] = rest
    return result


def answers_figure(
    frame: pd.DataFrame,
    *,
    min_fraction: float | None = None,
    selected_answers: Sequence[str] | None = None,
    order: Sequence[str] | None = None,
    title: str | None = None,
    xlabel: str = "share of answers",
    legend_title: str | None = None,
) -> Figure:
    """Stacked horizontal bars of answer shares (or mean next-token probabilities) per group."""
    shares = answer_shares(
        frame, min_fraction=min_fraction, selected_answers=selected_answers, order=order
    )
    if shares.empty:
        raise ValueError("no answers to plot")
    answers = list(shares.columns)
    named = [a for a in answers if a != OTHER]
    palette, patterns = colours(len(named)), hatches(len(named))
    height = max(2.4, 0.34 * len(shares) + 1.4)
    figure, (ax,) = new_figure(11, height)
    left = np.zeros(len(shares))
    y = np.arange(len(shares))
    handles = []
    for i, answer in enumerate(answers):
        values = shares[answer].to_numpy(float)
        is_other = answer == OTHER
        colour = OTHER_COLOUR if is_other else palette[i]
        hatch = None if is_other else patterns[i] or None
        bars: dict[str, Any] = {"color": colour, "hatch": hatch, "edgecolor": "white"}
        ax.barh(y, values, left=left, height=0.72, linewidth=0.5, **bars)
        left += values
        shown = repr(answer) if answer.strip() != answer or not answer else answer
        label = answer if is_other else shorten(shown, 36)
        handles.append(Patch(facecolor=colour, hatch=hatch, label=label))
    ax.set_yticks(y, [wrap(g, 30, 2) for g in shares.index])
    ax.set_ylim(len(shares) - 0.5, -0.5)
    scale_axis(ax, SHARE)
    ax.set_xlabel(xlabel)
    repeat_on_top(ax, height)
    return finish(figure, handles, title, legend_title=legend_title or "answer")


def scores_figure(
    frame: pd.DataFrame,
    scores: Sequence[str],
    *,
    order: Sequence[str] | None = None,
    title: str | None = None,
    scale: ScaleArgument = None,
) -> Figure:
    """Each score's distribution per group (violins cut to the data, quartiles dashed), one
    panel per score on its scale (`scale`: one for all or per score), groups as rows."""
    if not scores:
        raise ValueError("no score columns to plot")
    groups, styles = group_styles(frame["group"], order)
    height = max(2.4, 0.42 * len(groups) + 1.3)
    figure, axes = new_figure(min(4.4 * len(scores), 22), height, ncols=len(scores))
    palette = [styles[g][0] for g in groups]
    labels = frame["group"].astype(str).to_numpy()
    for panel, score in enumerate(scores):
        ax = axes[panel]
        values = pd.to_numeric(frame[score], errors="coerce").to_numpy(float)
        rows = [values[(labels == group) & ~np.isnan(values)] for group in groups]
        if not any(len(row) for row in rows):
            ax.text(0.5, 0.5, "no valid scores", ha="center", va="center", transform=ax.transAxes)
            ax.set_yticks([])
        else:
            draw_violins(ax, rows, palette)
            ax.scatter(
                [row.mean() if len(row) else np.nan for row in rows],
                range(len(groups)),
                color="black",
                marker="|",
                s=120,
                zorder=3,
            )
            ax.set_yticks(range(len(groups)), [wrap(g, 30, 2) for g in groups])
            ax.set_ylim(len(groups) - 0.5, -0.5)
        ax.grid(False, axis="y")
        ax.set_xlabel(wrap(score, 40, 1))
        scale_axis(ax, scale_for(score, scale))
        repeat_on_top(ax, height)
        if panel > 0:
            ax.set_yticklabels([])
    return finish(figure, [], title, fitted=True)
