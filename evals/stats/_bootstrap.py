"""Bootstrap intervals of a group's mean (hierarchical, plain), and `group_interval`, which
picks one of them or the default t interval by method."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from evals.stats._scales import Scale
from evals.stats._seeds import (
    DEFAULT_METHOD,
    METHODS,
    Interval,
    Method,
    check_confidence,
    empty_interval,
    labelled_values,
    seed_interval,
)

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 20240521
BootstrapMethod = Literal["hierarchical", "plain"]
_CHUNK_ELEMENTS = 2_000_000
"""Random indices drawn at once (bounds memory: 16 MB of int64)."""

FloatArray = npt.NDArray[np.float64]


def _generators(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """One stream picks models, the other resamples samples (so with one model both
    bootstraps draw the same resamples)."""
    pick, sample = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(pick), np.random.default_rng(sample)


def _resampled_means(values: FloatArray, count: int, rng: np.random.Generator) -> FloatArray:
    """`count` means of resamples (with replacement, same size) of `values`."""
    n = len(values)
    out = np.empty(count)
    rows = max(1, _CHUNK_ELEMENTS // max(n, 1))
    for start in range(0, count, rows):
        stop = min(count, start + rows)
        picks = rng.integers(0, n, size=(stop - start, n), dtype=np.int32)
        out[start:stop] = values[picks].mean(axis=1)
    return out


def _percentiles(estimates: FloatArray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(estimates, [tail, 1.0 - tail])
    return float(low), float(high)


def _check(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    check_confidence(confidence)


def plain_bootstrap(
    values: Sequence[float] | npt.ArrayLike,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Percentile interval of the mean of `values`, resampling them as one pool (NaN dropped)."""
    data = np.asarray(values, dtype=float)
    data = data[~np.isnan(data)]
    return _bootstrap([data] if data.size else [], resamples, confidence, seed, False)


def hierarchical_bootstrap(
    values: Sequence[float] | npt.ArrayLike,
    models: Sequence[object] | npt.ArrayLike,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Percentile interval of the mean of model means: each resample draws the models with
    replacement, then each drawn model's samples with replacement (NaN dropped first)."""
    return _bootstrap(_per_model(values, models), resamples, confidence, seed, True)


def _bootstrap(
    per_model: list[FloatArray], resamples: int, confidence: float, seed: int, hierarchical: bool
) -> Interval:
    """The mean of the models' means with its percentile interval: `hierarchical` draws the
    models with replacement, then each drawn model's samples; else the models are kept and
    only their samples resampled (sampling noise only)."""
    _check(resamples, confidence)
    if not per_model:
        return empty_interval()
    n_models = len(per_model)
    pick_rng, sample_rng = _generators(seed)
    if hierarchical:
        picks = pick_rng.integers(0, n_models, size=(resamples, n_models))
        counts = np.bincount(picks.ravel(), minlength=n_models)
        drawn = np.concatenate(
            [
                _resampled_means(samples, int(count), sample_rng)
                for samples, count in zip(per_model, counts, strict=True)
            ]
        )
        slot_means = np.empty(picks.size)
        slot_means[np.argsort(picks.ravel(), kind="stable")] = drawn
        estimates = slot_means.reshape(resamples, n_models).mean(axis=1)
    else:
        estimates = np.mean([_resampled_means(s, resamples, sample_rng) for s in per_model], axis=0)
    low, high = _percentiles(estimates, confidence)
    point = float(np.mean([samples.mean() for samples in per_model]))
    size = sum(len(samples) for samples in per_model)
    only = not hierarchical or n_models == 1
    return Interval(point, low, high, n_models, size, sampling_only=only)


def _per_model(
    values: Sequence[float] | npt.ArrayLike, models: Sequence[object] | npt.ArrayLike
) -> list[FloatArray]:
    """Each model's values (NaN dropped), models in sorted order."""
    data, labels, _ = labelled_values(values, models)
    if data.size == 0:
        return []
    _, codes = np.unique(labels.astype(str), return_inverse=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    return np.split(data[order], bounds)


def bootstrap_interval(
    values: Sequence[float] | npt.ArrayLike,
    models: Sequence[object] | npt.ArrayLike | None = None,
    *,
    method: BootstrapMethod = "hierarchical",
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """`hierarchical_bootstrap` (needs `models`) or the plain bootstrap, by `method`: of the
    values as one pool without `models`, with them of the mean of the models' means (each
    model's samples resampled, the models kept)."""
    if method not in ("hierarchical", "plain"):
        raise ValueError(f"unknown method {method!r}; use 'hierarchical' or 'plain'")
    if models is None:
        if method == "hierarchical":
            raise ValueError("the hierarchical bootstrap needs the model of each value")
        return plain_bootstrap(values, resamples=resamples, confidence=confidence, seed=seed)
    per_model = _per_model(values, models)
    return _bootstrap(per_model, resamples, confidence, seed, method == "hierarchical")


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
    """A group's mean with its interval: `t` over its models' means (`seed_interval`, the
    default) or a `hierarchical` or `plain` bootstrap (`resamples`, `seed`), within `scale`."""
    if method == "t":
        return seed_interval(values, models, scale=scale, confidence=confidence)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    interval = bootstrap_interval(
        values, models, method=method, resamples=resamples, confidence=confidence, seed=seed
    )
    if scale is None:
        return interval
    return replace(interval, low=max(interval.low, scale.low), high=min(interval.high, scale.high))
