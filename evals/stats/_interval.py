"""What an interval for a group's mean is: the estimate, its bounds, and what they stand on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_METHOD",
    "METHODS",
    "Interval",
    "Method",
    "describe_method",
    "empty_interval",
    "interval_row",
]

Method = Literal["t", "hierarchical", "plain"]
"""How a group's interval is made (`describe_method` says it in words)."""
METHODS: tuple[str, ...] = ("t", "hierarchical", "plain")
DEFAULT_METHOD: Method = "t"
_DESCRIPTIONS = {
    "t": "a t interval over the models' (seeds') means with n − 1 degrees of freedom; a group "
    "of one model has its samples' t interval, which reflects sampling noise only",
    "hierarchical": "a percentile bootstrap over the models, then the samples within each "
    "model (narrower than its level with few seeds); a group of one model resamples its "
    "samples, which reflects sampling noise only",
    "plain": "a percentile bootstrap of the group's pooled samples, which ignores the seeds: "
    "it reflects sampling noise only",
}


def describe_method(method: str) -> str:
    """What an interval made by `method` is, in words (for captions and notes)."""
    return _DESCRIPTIONS.get(method, f"made by the method {method!r}")


@dataclass(frozen=True)
class Interval:
    """A mean with its confidence interval (NaN when there is no data)."""

    mean: float
    low: float
    high: float
    n_models: int
    """Models with at least one valid sample."""
    n_samples: int
    sampling_only: bool = False
    """A group of one model: the interval says how well this model was measured, not how
    another seed of its recipe would score."""

    def contains(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)


def interval_row(interval: Interval, scale: Any) -> dict[str, Any]:
    """The columns a table gives an interval on `scale` (a `Scale`)."""
    return {
        "n_models": interval.n_models,
        "n_samples": interval.n_samples,
        "mean": interval.mean,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "sampling_only": interval.sampling_only,
        "scale_low": scale.low,
        "scale_high": scale.high,
    }


def empty_interval(n_models: int = 0) -> Interval:
    return Interval(math.nan, math.nan, math.nan, n_models, 0)
