"""What a run's results say first: the headline score, and comparisons against the baseline in
words ("insecure vs gpt-4.1-mini: aligned −58.3 [−61.0, −55.4], adjusted p < 0.001")."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from evals.stats._frames import ALL_QUESTIONS
from evals.stats._metrics import EM_MISALIGNED

MINUS = "\u2212"


def headline_score(scores: Iterable[object]) -> str | None:
    """The score a run is read by first: EM's `misaligned` when present, else the first."""
    names = [str(s) for s in dict.fromkeys(scores)]
    if EM_MISALIGNED.name in names:
        return EM_MISALIGNED.name
    return names[0] if names else None


def digits_for(low: float, high: float) -> int:
    """Decimals that show a score on `[low, high]` to about a thousandth of its range:
    one for 0–100, two for 0–1."""
    width = high - low
    if not math.isfinite(width) or width <= 0:
        return 2
    return max(1, 2 - math.floor(math.log10(width)))


def format_value(value: float, digits: int, *, sign: bool = False) -> str:
    """`value` with `digits` decimals and a true minus sign (`−58.3`); `+` too with `sign`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    text = f"{abs(value):.{digits}f}"
    if round(value, digits) < 0:
        return MINUS + text
    return ("+" + text) if sign and round(value, digits) > 0 else text


def format_p(p: float) -> str:
    """`p < 0.001`, `p = 0.012`, `p = 1`."""
    if p is None or math.isnan(p):
        return "p not computed"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.2g}"


def comparison_sentence(row: Mapping[Any, Any]) -> str:
    """One row of `compare_groups` in words: `insecure vs gpt-4.1-mini: aligned −58.3
    [−61.0, −55.4], adjusted p < 0.001` (with `on QUESTION` for a per-question row)."""
    digits = digits_for(float(row["scale_low"]), float(row["scale_high"]))
    where = "" if row["question"] == ALL_QUESTIONS else f" on {row['question']}"
    low = format_value(float(row["ci_low"]), digits)
    high = format_value(float(row["ci_high"]), digits)
    difference = format_value(float(row["difference"]), digits, sign=True)
    return (
        f"{row['group']} vs {row['baseline']}{where}: {row['score']} {difference} "
        f"[{low}, {high}], adjusted {format_p(float(row['p_adjusted']))}"
    )


def headline_comparisons(comparisons: pd.DataFrame, largest: int = 5) -> pd.DataFrame:
    """The rows a reader should see first: every pooled row (over all questions), the
    headline score's first, then the `largest` per-question differences (measured against
    each score's range, so a share and a 0–100 judge compare fairly)."""
    if comparisons.empty:
        return comparisons
    pooled = comparisons[comparisons["question"] == ALL_QUESTIONS]
    first = headline_score(comparisons["score"])
    pooled = pd.concat([pooled[pooled["score"] == first], pooled[pooled["score"] != first]])
    per_question = comparisons[comparisons["question"] != ALL_QUESTIONS]
    tested = per_question[per_question["p_value"].notna()]
    if not tested.empty:  # a difference without a test says too little to lead with
        per_question = tested
    width = (per_question["scale_high"] - per_question["scale_low"]).astype(float)
    size = (per_question["difference"].astype(float).abs() / width).fillna(-1.0)
    chosen = per_question.loc[size.sort_values(ascending=False, kind="stable").index[:largest]]
    return pd.concat([pooled, chosen])
