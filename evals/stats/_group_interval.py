"""`group_interval`: a group's mean with its interval, by the method asked for."""

from __future__ import annotations

from collections.abc import Sequence

import numpy.typing as npt

from evals.stats._bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_interval
from evals.stats._interval import DEFAULT_METHOD, METHODS, Interval, Method
from evals.stats._scales import Scale
from evals.stats._seeds import seed_interval

__all__ = ["group_interval"]


def group_interval(
    values: Sequence[float] | npt.ArrayLike,
    models: Sequence[object] | npt.ArrayLike,
    *,
    method: Method = DEFAULT_METHOD,
    scale: Scale | None = None,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """The interval of a group's mean score: `t` over its models' means (the default,
    `seed_interval`), or a `hierarchical` or `plain` bootstrap (`bootstrap_interval`;
    `resamples` and `seed` apply to these only)."""
    if method == "t":
        return seed_interval(values, models, scale=scale, confidence=confidence)
    if method in ("hierarchical", "plain"):
        interval = bootstrap_interval(
            values, models, method=method, resamples=resamples, confidence=confidence, seed=seed
        )
        if scale is None:
            return interval
        return Interval(
            interval.mean,
            max(interval.low, scale.low),
            min(interval.high, scale.high),
            interval.n_models,
            interval.n_samples,
            interval.sampling_only,
        )
    raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
