"""The tables `labmgr eval run` prints, each fitted to the terminal.

The compact summary is question × group for the run's headline score: cells `mean [low,
high]`, marked `*` where Holm keeps the difference from the baseline, a last row over all
questions. When too wide, question names are shortened, then the cells keep their means
only, then the last groups are left out (the legend says which). `--full` prints the whole
summary and every comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from labmgr.cli.fitted_table import Column, print_fitted

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MARK",
    "SIGNIFICANT",
    "compact_summary",
    "print_comparisons",
    "print_full_summary",
]

MARK = "*"
SIGNIFICANT = 0.05
_SHORT_NAME = 20
_POOLED_LABEL = "all questions"


def _shorten(text: str, width: int = _SHORT_NAME) -> str:
    """`enough_of_my…_template`: the head and the tail, when longer than `width`."""
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 3
    return text[:head] + "…" + text[-(width - 1 - head) :]


def _cell(row: Any, digits: int, *, interval: bool, marked: bool) -> str:
    from evals.stats import format_value

    mean = float(row["mean"])
    if math.isnan(mean):
        return ""
    text = format_value(mean, digits)
    low, high = float(row["ci_low"]), float(row["ci_high"])
    if interval and not math.isnan(low):
        text += f" [{format_value(low, digits)}, {format_value(high, digits)}]"
    return text + (MARK if marked else "")


def _bounds(row: Any, digits: int) -> str:
    """`low – high`, or nothing without an interval."""
    from evals.stats import format_value

    low, high = float(row["ci_low"]), float(row["ci_high"])
    return "" if math.isnan(low) else f"{format_value(low, digits)} – {format_value(high, digits)}"


def _width(console: Console, table: Table) -> int:
    options = console.options.update(max_width=1_000_000)
    return console.measure(table, options=options).maximum


def _significant(comparisons: pd.DataFrame | None, score: str) -> set[tuple[str, str]]:
    """(question, group) pairs of `score` whose difference from the baseline is kept by
    Holm at 0.05."""
    if comparisons is None or comparisons.empty:
        return set()
    rows = comparisons[
        (comparisons["score"].astype(str) == score) & (comparisons["p_adjusted"] < SIGNIFICANT)
    ]
    return {(str(q), str(g)) for q, g in zip(rows["question"], rows["group"], strict=True)}


def compact_summary(
    summary: pd.DataFrame,
    comparisons: pd.DataFrame | None,
    *,
    console: Console,
    baseline: str | None,
    method_words: str,
) -> tuple[Table, list[str]] | None:
    """The compact table and the lines of its legend, or None when no question has a
    score."""
    from evals.stats import ALL_QUESTIONS, digits_for, headline_score

    if summary.empty:
        return None
    score = headline_score(summary["score"])
    if score is None:
        return None
    rows = summary[summary["score"].astype(str) == score]
    groups = list(dict.fromkeys(rows["group"].astype(str)))
    questions = list(dict.fromkeys(rows["question"].astype(str)))
    if ALL_QUESTIONS in questions:
        questions = [q for q in questions if q != ALL_QUESTIONS] + [ALL_QUESTIONS]
    low, high = float(rows["scale_low"].iloc[0]), float(rows["scale_high"].iloc[0])
    digits = digits_for(low, high)
    marked = _significant(comparisons, score)
    cells = {(str(r["question"]), str(r["group"])): r for r in rows.to_dict("records")}
    kind = "share, 0–1" if (low, high) == (0.0, 1.0) else f"{low:g}–{high:g}"
    title = f"{score} ({kind}): mean [95% CI] per question and group"

    def build(short_names: bool, interval: bool, shown: Sequence[str]) -> Table:
        table = Table(title=title, title_justify="left")
        table.add_column("question", no_wrap=True)
        for group in shown:
            header = _shorten(group) if short_names else group
            table.add_column(header, justify="right", no_wrap=True)
        for question in questions:
            label = _POOLED_LABEL if question == ALL_QUESTIONS else question
            line = [Text(_shorten(label) if short_names else label)]
            for group in shown:
                row = cells.get((question, group))
                text = (
                    ""
                    if row is None
                    else _cell(row, digits, interval=interval, marked=(question, group) in marked)
                )
                line.append(Text(text, justify="right"))
            table.add_row(*line)
        return table

    legend: list[str] = []
    chosen: Table | None = None
    for short_names, interval in ((False, True), (True, True), (False, False), (True, False)):
        candidate = build(short_names, interval, groups)
        if _width(console, candidate) <= console.width:
            chosen = candidate
            break
    if chosen is None:
        shown = list(groups)
        keep_first = [baseline] if baseline in shown else []
        while len(shown) > 1:
            dropped = next(g for g in reversed(shown) if g not in keep_first)
            shown.remove(dropped)
            candidate = build(True, False, shown)
            if _width(console, candidate) <= console.width:
                chosen = candidate
                break
        if chosen is None:
            chosen = build(True, False, shown[:1])
        left_out = [g for g in groups if g not in shown]
        legend.append(
            f"Not shown for want of width: {', '.join(left_out)} (see summary.csv or --full)."
        )
    if baseline is not None and comparisons is not None:
        legend.append(
            f"{MARK} differs from {baseline}: Holm-adjusted p < {SIGNIFICANT:g} over the run's "
            f"{len(comparisons)} comparisons (comparisons.csv)."
        )
    legend.append(f"95% intervals: {method_words}.")
    return chosen, legend


def print_full_summary(console: Console, summary: pd.DataFrame) -> None:
    """Every row of summary.csv, fitted to the terminal."""
    from evals.stats import ALL_QUESTIONS, digits_for, format_value

    columns = [
        Column("question", 9, compact=_shorten),
        Column("group", 8, compact=_shorten),
        Column("score", 7),
        Column("models", 3, justify="right"),
        Column("samples", 2, justify="right"),
        Column("mean", 6, justify="right"),
        Column("95% CI", 5, justify="right"),
        Column("refusals", 1, justify="right"),
    ]
    rows = []
    for row in summary.to_dict("records"):
        digits = digits_for(float(row["scale_low"]), float(row["scale_high"]))
        rate = float(row["refusal_rate"])
        rows.append(
            [
                _POOLED_LABEL if row["question"] == ALL_QUESTIONS else str(row["question"]),
                str(row["group"]),
                str(row["score"]),
                str(row["n_models"]),
                str(row["n_samples"]),
                format_value(float(row["mean"]), digits),
                _bounds(row, digits),
                "" if math.isnan(rate) else f"{rate:.1%}",
            ]
        )
    print_fitted(console, columns, rows, title="Summary (summary.csv)")


def print_comparisons(console: Console, comparisons: pd.DataFrame) -> None:
    """Every row of comparisons.csv, fitted to the terminal."""
    from evals.stats import ALL_QUESTIONS, digits_for, format_p, format_value

    columns = [
        Column("question", 9, compact=_shorten),
        Column("score", 8),
        Column("group", 7, compact=_shorten),
        Column("difference", 6, justify="right"),
        Column("95% CI", 5, justify="right"),
        Column("adjusted p", 4, justify="right"),
        Column("models", 2, justify="right"),
    ]
    rows = []
    for row in comparisons.to_dict("records"):
        digits = digits_for(float(row["scale_low"]), float(row["scale_high"]))
        rows.append(
            [
                _POOLED_LABEL if row["question"] == ALL_QUESTIONS else str(row["question"]),
                str(row["score"]),
                str(row["group"]),
                format_value(float(row["difference"]), digits, sign=True),
                _bounds(row, digits),
                format_p(float(row["p_adjusted"])).removeprefix("p = ").removeprefix("p "),
                f"{row['n_models']} vs {row['n_models_baseline']}",
            ]
        )
    baseline = str(comparisons["baseline"].iloc[0]) if not comparisons.empty else "the baseline"
    print_fitted(console, columns, rows, title=f"Against {baseline} (comparisons.csv)")
