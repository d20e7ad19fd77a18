"""The statistics `labmgr eval run` and `eval score` print, each table fitted to the terminal."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.console import Console

from labmgr.cli.fitted_table import Column, ItemColumns, print_fitted, print_items

if TYPE_CHECKING:
    import pandas as pd

    from evals.runs import Run

MARK = "*"
SIGNIFICANT = 0.05
_POOLED_LABEL = "all questions"


def _shorten(text: str, width: int = 20) -> str:
    """`enough_of_my…_template`: the head and the tail, when longer than `width`."""
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 3
    return text[:head] + "…" + text[-(width - 1 - head) :]


def _question(row: Any) -> str:
    from evals.stats import ALL_QUESTIONS

    return _POOLED_LABEL if row["question"] == ALL_QUESTIONS else str(row["question"])


def score_cell(row: Any, *, interval: bool = True, marked: bool = False) -> str:
    """A summary row's ``mean [low, high]`` (or the mean alone), `*` when `marked`."""
    if math.isnan(row["mean"]):
        return ""
    text = _value(row, "mean")
    if interval and not math.isnan(row["ci_low"]):
        text += f" [{_value(row, 'ci_low')}, {_value(row, 'ci_high')}]"
    return text + (MARK if marked else "")


def _value(row: Any, name: str, *, sign: bool = False) -> str:
    """`row[name]` with as many decimals as its score's scale needs."""
    from evals.stats import digits_for, format_value

    digits = digits_for(float(row["scale_low"]), float(row["scale_high"]))
    return format_value(float(row[name]), digits, sign=sign)


def _bounds(row: Any) -> str:
    """`low – high`, or nothing without an interval."""
    return (
        "" if math.isnan(row["ci_low"]) else f"{_value(row, 'ci_low')} – {_value(row, 'ci_high')}"
    )


def significant(comparisons: pd.DataFrame | None) -> set[tuple[str, str, str]]:
    """(question, group, score) of the differences from the baseline Holm keeps at 0.05."""
    if comparisons is None or comparisons.empty:
        return set()
    kept = comparisons[comparisons["p_adjusted"] < SIGNIFICANT].astype(str)
    return set(zip(kept["question"], kept["group"], kept["score"], strict=True))


def show_statistics(console: Console, run: Run, *, full: bool) -> None:
    """The compact summary (or with `full`, every row and comparison), then the comparisons
    over all questions in words."""
    from evals.stats import describe_method, folded_levels

    summary = folded_levels(run.summary, run.by)  # a level shows like a question
    split = None if run.comparisons is None else folded_levels(run.comparisons, run.by)
    if full:
        if not summary.empty:
            _print_full_summary(console, summary)
        if split is not None and not split.empty:
            _print_comparisons(console, split)
    elif not summary.empty:
        method = describe_method(str(run.statistics.get("method", "t")))
        _print_compact_summary(console, summary, split, run.baseline, method)
    if not run.by:
        print_pooled_comparisons(console, run.comparisons, run.baseline)


def print_pooled_comparisons(
    console: Console,
    comparisons: pd.DataFrame | None,
    baseline: str | dict[str, str] | None,
    where: str = "",
) -> None:
    """Each group against the baseline over all questions, in words."""
    from evals.stats import ALL_QUESTIONS, baseline_words, comparison_sentence

    if comparisons is None or comparisons.empty:
        return
    pooled = comparisons[comparisons["question"] == ALL_QUESTIONS]
    if pooled.empty:
        return
    against = baseline_words(baseline) if baseline is not None else "the baseline"
    console.print(f"Against {against}, over all questions{where}:", markup=False)
    for row in pooled.to_dict("records"):
        console.print(f"  {comparison_sentence(row)}", markup=False)


def _print_compact_summary(
    console: Console,
    summary: pd.DataFrame,
    comparisons: pd.DataFrame | None,
    baseline: str | dict[str, str] | None,
    method_words: str,
) -> None:
    """The headline score's question × group table (cells `mean [low, high]`, `*` where Holm
    keeps the difference from the baseline, a last row over all questions) and its legend.
    When too wide, the last groups' cells keep their means only, then question names are
    shortened, then the last groups are left out, the baseline last."""
    from evals.stats import ALL_QUESTIONS, baseline_words, headline_score

    score = headline_score(summary["score"])
    if score is None:
        return
    rows = summary[summary["score"].astype(str) == score]
    groups = list(dict.fromkeys(rows["group"].astype(str)))
    questions = list(dict.fromkeys(rows["question"].astype(str)))
    if ALL_QUESTIONS in questions:
        questions = [q for q in questions if q != ALL_QUESTIONS] + [ALL_QUESTIONS]
    marked = significant(comparisons)
    cells = {(str(r["question"]), str(r["group"])): r for r in rows.to_dict("records")}
    table = []
    for question in questions:
        line = [_POOLED_LABEL if question == ALL_QUESTIONS else question]
        for group in groups:
            row = cells.get((question, group))
            mark = (question, group, score) in marked
            line.append("" if row is None else score_cell(row, marked=mark))
        table.append(line)
    bases = [baseline] if isinstance(baseline, str) else list((baseline or {}).values())
    rank = sorted(groups, key=lambda group: group not in bases)  # the last groups go first
    columns = [Column("question", len(groups) + 1, compact=_shorten)] + [
        Column(group, len(groups) - rank.index(group), compact=mean_only, justify="right")
        for group in groups
    ]
    low, high = float(rows["scale_low"].iloc[0]), float(rows["scale_high"].iloc[0])
    kind = "share, 0–1" if (low, high) == (0.0, 1.0) else f"{low:g}–{high:g}"
    title = f"{score} ({kind}): mean [95% CI] per question and group"
    shown = print_fitted(console, columns, table, title=title)
    legend: list[str] = []
    left_out = [group for group in groups if group not in shown[1:]]
    if left_out:
        legend.append(f"Not shown for want of width: {', '.join(left_out)} (see --full).")
    if baseline is not None and comparisons is not None:
        legend.append(
            f"{MARK} differs from {baseline_words(baseline)}: Holm-adjusted p < {SIGNIFICANT:g} "
            "over the run's "
            f"{len(comparisons)} comparisons (comparisons.csv)."
        )
    legend.append(f"95% intervals: {method_words}.")
    for sentence in legend:
        console.print(sentence, markup=False)


def mean_only(cell: str) -> str:
    """`25.3 [19.9, 30.9]*` → `25.3*` (for a narrow terminal)."""
    mean, _, rest = cell.partition(" [")
    return mean + (MARK if rest.endswith(MARK) else "")


def _print_full_summary(console: Console, summary: pd.DataFrame) -> None:
    """Every row of summary.csv, fitted to the terminal."""
    columns: ItemColumns[Any] = [
        (Column("question", 9, compact=_shorten), _question),
        (Column("group", 8, compact=_shorten), lambda row: str(row["group"])),
        (Column("score", 7), lambda row: str(row["score"])),
        (Column("models", 3, justify="right"), lambda row: str(row["n_models"])),
        (Column("samples", 2, justify="right"), lambda row: str(row["n_samples"])),
        (Column("mean", 6, justify="right"), lambda row: _value(row, "mean")),
        (Column("95% CI", 5, justify="right"), _bounds),
        (Column("refusals", 1, justify="right"), lambda row: _percent(row["refusal_rate"])),
    ]
    print_items(console, summary.to_dict("records"), columns, title="Summary (summary.csv)")


def _percent(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.1%}"


def _print_comparisons(console: Console, comparisons: pd.DataFrame) -> None:
    """Every row of comparisons.csv, fitted to the terminal."""
    columns: ItemColumns[Any] = [
        (Column("question", 9, compact=_shorten), _question),
        (Column("score", 8), lambda row: str(row["score"])),
        (Column("group", 7, compact=_shorten), lambda row: str(row["group"])),
        (Column("difference", 6, justify="right"), lambda r: _value(r, "difference", sign=True)),
        (Column("95% CI", 5, justify="right"), _bounds),
        (Column("adjusted p", 4, justify="right"), lambda row: _p(row["p_adjusted"])),
        (
            Column("models", 2, justify="right"),
            lambda r: f"{r['n_models']} vs {r['n_models_baseline']}",
        ),
    ]
    baselines = list(dict.fromkeys(comparisons["baseline"].astype(str)))
    baseline = baselines[0] if len(baselines) == 1 else "each group's own baseline"
    title = f"Against {baseline} (comparisons.csv)"
    print_items(console, comparisons.to_dict("records"), columns, title=title)


def _p(value: float) -> str:
    """`format_p` without the ``p``: ``0.012``, ``< 0.001``."""
    from evals.stats import format_p

    return format_p(float(value)).removeprefix("p = ").removeprefix("p ")
