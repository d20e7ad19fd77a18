"""A judge against human labels of the same answers: Spearman's ρ and Cohen's κ with 95%
intervals (docs/design/statistics.md); labelled answers are taken as independent draws."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evals.stats._metrics import Metric, Threshold
from evals.stats._scales import Scale

AGREEMENT_COLUMNS = [
    "question",
    "score",
    "n",
    "judge_mean",
    "human_mean",
    "spearman",
    "spearman_low",
    "spearman_high",
    "kappa",
    "kappa_low",
    "kappa_high",
    "bins",
    "weights",
]
"""Per question × score (and per score over all questions): `n` answers labelled and judged,
both means, ρ and κ with their intervals, κ's bins and weights."""

FloatArray = npt.NDArray[np.float64]
MIN_PER_BIN = 5
"""κ gets an interval only when each bin holds this many answers by the judge and humans."""
_RESAMPLES = 2000
_BOOTSTRAP_SEED = 20240521


@dataclass(frozen=True)
class Bins:
    """Cut points of a score: a value is in bin i when it passes i of the cuts."""

    cuts: tuple[Threshold, ...]

    def of(self, values: FloatArray) -> npt.NDArray[np.int64]:
        index = np.zeros(len(values), dtype=np.int64)
        for cut in self.cuts:
            above = values >= cut.value if cut.operator in ("<", ">=") else values > cut.value
            index += above.astype(np.int64)
        return index

    @property
    def count(self) -> int:
        return len(self.cuts) + 1

    def __str__(self) -> str:
        bounds = [f"{'≥' if c.operator in ('<', '>=') else '>'} {c.value:g}" for c in self.cuts]
        first = self.cuts[0]
        lowest = f"{'<' if first.operator in ('<', '>=') else '≤'} {first.value:g}"
        return " | ".join([lowest, *bounds])


def score_bins(score: str, metrics: Sequence[Metric], scale: Scale) -> Bins:
    """The bins of `score`: cut at the metrics' thresholds on it, else mid-scale."""
    cuts: dict[float, Threshold] = {}
    for metric in metrics:
        conditions = [metric.share, *([metric.among] if metric.among is not None else [])]
        for condition in conditions:
            for threshold in condition.thresholds:
                if threshold.column == score and threshold.operator not in ("==", "!="):
                    cuts.setdefault(threshold.value, threshold)
    if not cuts:
        middle = (scale.low + scale.high) / 2
        cuts[middle] = Threshold(score, "<", middle)
    return Bins(tuple(cuts[value] for value in sorted(cuts)))


def spearman_interval(
    judge: Sequence[float] | FloatArray,
    human: Sequence[float] | FloatArray,
    *,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """(ρ, low, high); NaN with fewer than 4 pairs or a constant side."""
    from scipy import special  # loaded when first needed

    x, y = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    n = len(x)
    if n < 4 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan, math.nan, math.nan
    from scipy import stats  # a second to import: only when labels are compared

    rho = float(stats.spearmanr(x, y).statistic)
    z = math.atanh(min(max(rho, -0.999999), 0.999999))
    se = math.sqrt((1 + rho * rho / 2) / (n - 3))
    critical = float(special.ndtri(1 - (1 - confidence) / 2))
    return rho, math.tanh(z - critical * se), math.tanh(z + critical * se)


def _kappa(
    judge: npt.NDArray[np.int64], human: npt.NDArray[np.int64], categories: int, axis: int = -1
) -> FloatArray:
    """Linearly weighted κ over `axis`, vectorised over the bootstrap's resamples."""
    index = np.arange(categories)
    weights = 1.0 - np.abs(index[:, None] - index[None, :]) / max(categories - 1, 1)
    judge_share = np.stack([(judge == i).mean(axis=axis) for i in index], axis=-1)
    human_share = np.stack([(human == i).mean(axis=axis) for i in index], axis=-1)
    observed = sum(
        weights[i, j] * ((judge == i) & (human == j)).mean(axis=axis) for i in index for j in index
    )
    expected = np.einsum("...i,ij,...j->...", judge_share, weights, human_share)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((observed - expected) / (1.0 - expected), dtype=float)


def cohen_kappa(
    judge: npt.NDArray[np.int64],
    human: npt.NDArray[np.int64],
    categories: int,
    *,
    confidence: float = 0.95,
) -> tuple[float, float, float, str]:
    """(κ, low, high, weights) over `categories` ordered bins (see the module docstring); κ
    is NaN when chance agreement is total."""
    weights_name = "linear" if categories > 2 else "none"
    judge, human = np.asarray(judge, dtype=np.int64), np.asarray(human, dtype=np.int64)
    if len(judge) == 0:
        return math.nan, math.nan, math.nan, weights_name
    kappa = float(_kappa(judge, human, categories))
    counts = [np.bincount(side, minlength=categories).min() for side in (judge, human)]
    if math.isnan(kappa) or min(counts) < MIN_PER_BIN:
        return kappa, math.nan, math.nan, weights_name
    from scipy import stats  # a second to import: only when labels are compared

    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        # A degenerate resample distribution gives NaN bounds, reported as no interval.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        found = stats.bootstrap(
            (judge, human),
            lambda a, b, axis=-1: _kappa(a, b, categories, axis),
            paired=True,
            vectorized=True,
            n_resamples=_RESAMPLES,
            confidence_level=confidence,
            method="BCa",
            random_state=np.random.default_rng(_BOOTSTRAP_SEED),
        )
    low, high = (float(v) for v in found.confidence_interval)
    if math.isnan(low) or math.isnan(high):
        low = high = math.nan
    return kappa, max(low, -1.0), min(high, 1.0), weights_name


@dataclass(frozen=True)
class Agreement:
    """A judge against human labels on the same answers."""

    n: int
    judge_mean: float
    human_mean: float
    spearman: float
    spearman_low: float
    spearman_high: float
    kappa: float
    kappa_low: float
    kappa_high: float
    bins: Bins
    weights: str


def agreement(
    judge: Sequence[float] | FloatArray,
    human: Sequence[float] | FloatArray,
    bins: Bins,
    *,
    confidence: float = 0.95,
) -> Agreement:
    """ρ and κ (on `bins`) of the pairs where both the judge and the human gave a score."""
    x, y = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    both = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[both], y[both]
    kappa, low, high, weights = cohen_kappa(
        bins.of(x), bins.of(y), bins.count, confidence=confidence
    )
    return Agreement(
        int(both.sum()),
        float(x.mean()) if len(x) else math.nan,
        float(y.mean()) if len(y) else math.nan,
        *spearman_interval(x, y, confidence=confidence),
        kappa,
        low,
        high,
        bins,
        weights,
    )
