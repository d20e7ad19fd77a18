"""Intervals of a group's mean; the default: a t interval over its models' (seeds') means,
floored at sampling noise, on the logit scale for shares (docs/design/statistics.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from evals.stats._scales import Scale

FLOOR_QUANTILE = 0.05
"""The variance of a group mean is at least this quantile of its sampling-noise-only
distribution."""

FloatArray = npt.NDArray[np.float64]

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
    "plain": "a percentile bootstrap of the samples within each model, the models kept, "
    "which ignores the seeds' spread: it reflects sampling noise only",
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


def check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")


def t_quantile(tail: float, df: float) -> float:
    """The t quantile with `tail` above it (scipy's ufunc: fast, precise in the far tail)."""
    from scipy import special  # loaded when first needed

    return -float(special.stdtrit(df, tail))


def empty_interval(n_models: int = 0) -> Interval:
    return Interval(math.nan, math.nan, math.nan, n_models, 0)


@dataclass(frozen=True)
class SeedMeans:
    """One group's score reduced to its models (seeds), the unit of replication."""

    means: FloatArray
    """Per model: the mean of its per-question means (one question: of its samples)."""
    variances: FloatArray
    """Per model: the sampling variance of that mean, Σ s²/n over its questions / Q² (NaN when
    a question has a single sample)."""
    inverse_sizes: FloatArray
    """Per model: Σ 1/n over its questions / Q², the variance of its mean per unit of
    within-model variance."""
    within_variance: float
    """Pooled within-model variance of one sample (a share: p(1 − p) at the empirical p);
    NaN when no model has two samples."""
    within_df: int
    """Degrees of freedom of `within_variance`: samples minus (model, question) cells."""
    n_samples: int
    share: bool

    @property
    def n_models(self) -> int:
        return len(self.means)

    @property
    def mean(self) -> float:
        """The group's estimate: the mean of its models' means (each seed weighs the same)."""
        return float(self.means.mean()) if self.n_models else math.nan

    @property
    def sampling_only(self) -> bool:
        return self.n_models == 1

    def variance(self) -> tuple[float, float]:
        """(variance of `mean`, its degrees of freedom); NaN when it cannot be estimated."""
        k = self.n_models
        if k == 0:
            return math.nan, math.nan
        if k == 1:
            df = self.within_df
            if df < 1:
                return math.nan, math.nan
            pooled = self.within_variance * float(self.inverse_sizes[0])
            own = float(self.variances[0])
            variance = pooled if math.isnan(own) else own
            return max(variance, _floor(df) * pooled), float(df)
        between = float(self.means.var(ddof=1)) / k
        floor = _floor(k - 1) * self.within_variance * float(self.inverse_sizes.sum()) / k**2
        return (between if math.isnan(floor) else max(between, floor)), float(k - 1)


def _floor(df: float) -> float:
    """The `FLOOR_QUANTILE` quantile of a variance estimate with `df` degrees of freedom, over
    the true variance."""
    from scipy import special  # loaded when first needed

    return float(special.chdtri(df, 1.0 - FLOOR_QUANTILE)) / df


def labelled_values(
    values: Sequence[float] | npt.ArrayLike, models: Sequence[object] | npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.object_], npt.NDArray[np.bool_]]:
    """The values that are not NaN with their models, and the mask that kept them."""
    data = np.asarray(values, dtype=float)
    labels = np.asarray(models, dtype=object)
    if data.shape != labels.shape:
        raise ValueError(f"values and models differ in length ({data.size} vs {labels.size})")
    keep = ~np.isnan(data)
    return data[keep], labels[keep], keep


def seed_means(
    values: Sequence[float] | npt.ArrayLike,
    models: Sequence[object] | npt.ArrayLike,
    questions: Sequence[object] | npt.ArrayLike | None = None,
    *,
    share: bool = False,
) -> SeedMeans:
    """A group's samples reduced to per-model means (NaN dropped); with `questions`, each
    model averaged within each question first (every question weighs the same)."""
    data, labels, keep = labelled_values(values, models)
    if data.size == 0:
        return SeedMeans(np.empty(0), np.empty(0), np.empty(0), math.nan, 0, 0, share)
    model_codes, _ = pd.factorize(labels)
    cells = model_codes.astype(np.int64)
    if questions is not None:
        topics = np.asarray(questions, dtype=object)
        if topics.shape != keep.shape:
            raise ValueError(
                f"values and questions differ in length ({keep.size} vs {topics.size})"
            )
        question_codes, uniques = pd.factorize(topics[keep])
        cells = cells * len(uniques) + question_codes
    cell_codes, _ = pd.factorize(cells)
    counts = np.bincount(cell_codes).astype(float)
    cell_means = np.bincount(cell_codes, weights=data) / counts
    deviations = data - cell_means[cell_codes]
    squares = np.bincount(cell_codes, weights=deviations * deviations)
    with np.errstate(invalid="ignore", divide="ignore"):
        cell_variances = np.where(counts > 1, squares / (counts - 1), np.nan)
    cell_models = np.empty(len(counts), dtype=np.int64)
    cell_models[cell_codes] = model_codes
    per_model = np.bincount(cell_models).astype(float)
    means = np.bincount(cell_models, weights=cell_means) / per_model
    variances = np.bincount(cell_models, weights=cell_variances / counts) / per_model**2
    inverse_sizes = np.bincount(cell_models, weights=1.0 / counts) / per_model**2
    within_df = int(data.size - len(counts))
    if share:
        p = (float(data.sum()) + 0.5) / (data.size + 1)
        within = p * (1.0 - p)
    else:
        within = float(squares.sum()) / within_df if within_df > 0 else math.nan
    return SeedMeans(means, variances, inverse_sizes, within, within_df, int(data.size), share)


def interval_of(
    seeds: SeedMeans, *, confidence: float = 0.95, scale: Scale | None = None
) -> Interval:
    """The t interval of `seeds.mean` (see the module docstring)."""
    from scipy import special  # loaded when first needed

    check_confidence(confidence)
    mean = seeds.mean
    variance, df = seeds.variance()
    t = t_quantile((1.0 - confidence) / 2, df)
    if math.isnan(mean) or math.isnan(variance):
        low = high = math.nan
    elif seeds.share:
        n = seeds.n_samples  # ½ a success and ½ a failure added: inside 0–1 even at 0 or 1
        centre = (seeds.mean * n + 0.5) / (n + 1)
        spread = math.sqrt(variance) / (centre * (1.0 - centre))
        middle = float(special.logit(centre))
        low = min(float(special.expit(middle - t * spread)), mean)
        high = max(float(special.expit(middle + t * spread)), mean)
    else:
        half = t * math.sqrt(variance)
        low, high = mean - half, mean + half
        if scale is not None:
            low, high = max(low, scale.low), min(high, scale.high)
    return Interval(mean, low, high, seeds.n_models, seeds.n_samples, seeds.sampling_only)


def seed_interval(
    values: Sequence[float] | npt.ArrayLike,
    models: Sequence[object] | npt.ArrayLike,
    questions: Sequence[object] | npt.ArrayLike | None = None,
    *,
    scale: Scale | None = None,
    confidence: float = 0.95,
) -> Interval:
    """The default interval of a group's mean (see the module docstring), clipped to `scale`
    (a share scale: on the logit scale); with `questions`, each model is averaged over its
    questions first."""
    share = scale is not None and scale.is_share
    seeds = seed_means(values, models, questions, share=share)
    return interval_of(seeds, confidence=confidence, scale=scale)
