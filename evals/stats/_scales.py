"""The scale a score lives on (a 0–100 judge, a rating's own range, or a share on 0–1), taken
from what the score is, never from the spread of the data."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evals.stats._metrics import Metric


@dataclass(frozen=True)
class Scale:
    """The range `[low, high]` a score can take; `kind="share"` for the share of rows meeting a
    condition (0–1, each row a 0/1 outcome)."""

    low: float
    high: float
    kind: Literal["score", "share"] = "score"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low >= self.high:
            raise ValueError(f"a scale needs finite low < high, got [{self.low}, {self.high}]")
        if self.kind == "share" and (self.low, self.high) != (0.0, 1.0):
            raise ValueError("a share lies on [0, 1]")

    @property
    def is_share(self) -> bool:
        return self.kind == "share"

    @property
    def width(self) -> float:
        return self.high - self.low


ZERO_TO_HUNDRED = Scale(0.0, 100.0)
"""Judges and ratings unless their question says otherwise."""
SHARE = Scale(0.0, 1.0, "share")
"""Derived metrics: the share of rows meeting a condition."""


def _range_of(item: Any) -> Scale | None:
    low, high = getattr(item, "min_rating", None), getattr(item, "max_rating", None)
    if isinstance(low, int | float) and isinstance(high, int | float) and low < high:
        return Scale(float(low), float(high))
    return None


def score_scale(score: object, question: object | None = None) -> Scale:
    """The scale of `score` (a column name or a `Metric`): a metric is a share; with the
    question, a rating's `answer` or a rating judge's column takes its `min_rating` and
    `max_rating`; anything else is a 0–100 judge or rating, the default of both."""
    if isinstance(score, Metric):
        return SHARE
    if question is not None:
        judges = getattr(question, "judges", None)
        if isinstance(judges, Mapping) and score in judges:
            return _range_of(judges[score]) or ZERO_TO_HUNDRED
        if score == "answer":
            return _range_of(question) or ZERO_TO_HUNDRED
    return ZERO_TO_HUNDRED
