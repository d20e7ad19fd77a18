"""Each group against a baseline: the difference of seed means with its interval and a
Holm-corrected p (Welch, or Cochran–Cox against one model: docs/design/statistics.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from evals.stats._frames import ALL_QUESTIONS, Score, ScoreScales, by_columns, score_cells, with_by
from evals.stats._metrics import Metric
from evals.stats._scales import Scale
from evals.stats._seeds import SeedMeans, check_confidence, seed_means, t_quantile

DIFFERENCE_COLUMNS = [
    "n_models",
    "n_models_baseline",
    "mean",
    "mean_baseline",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "p_adjusted",
    "method",
    "sampling_only",
    "scale_low",
    "scale_high",
]
"""The columns `difference_row` gives a difference, in order."""
COMPARISON_COLUMNS = ["question", "score", "group", "baseline", *DIFFERENCE_COLUMNS]
"""`difference` = `mean` − `mean_baseline` with its interval and two-sided `p_value`;
`p_adjusted`: Holm over every row of the call. `sampling_only`: the group has one model, so
the comparison speaks of that model, not of its recipe."""


_SMALLEST_LOG_P = -100.0
"""p-values below 10^-100 are reported as 0 (t quantiles lose precision beyond)."""


@dataclass(frozen=True)
class Difference:
    """A group's mean minus the baseline's, with its interval and two-sided p-value."""

    mean: float
    mean_baseline: float
    difference: float
    low: float
    high: float
    p_value: float
    n_models: int
    n_models_baseline: int
    method: str
    """`welch`, `cochran-cox` (see the module docstring), or for levels `paired-t` or
    `sampling` (one model)."""

    @property
    def sampling_only(self) -> bool:
        return self.n_models == 1


def difference_of(group: SeedMeans, baseline: SeedMeans, *, confidence: float = 0.95) -> Difference:
    """The difference of two groups' means with its interval and p-value."""
    check_confidence(confidence)
    welch = group.n_models > 1 and baseline.n_models > 1
    difference = group.mean - baseline.mean
    low, high, p_value = t_test(
        difference, [group.variance(), baseline.variance()], welch, confidence
    )
    return Difference(
        group.mean,
        baseline.mean,
        difference,
        low,
        high,
        p_value,
        group.n_models,
        baseline.n_models,
        "welch" if welch else "cochran-cox",
    )


def t_test(
    difference: float, sides: Sequence[tuple[float, float]], welch: bool, confidence: float
) -> tuple[float, float, float]:
    """(low, high, two-sided p) of a difference whose variance is the sum of `sides`
    (variance, degrees of freedom); NaN when it cannot be estimated."""
    variance = sum(v for v, _ in sides)
    if math.isnan(difference) or math.isnan(variance):
        return math.nan, math.nan, math.nan
    if variance == 0:  # every sample alike: no noise to test against
        return difference, difference, 1.0 if difference == 0 else math.nan
    se = math.sqrt(variance)
    critical = _critical(sides, 1.0 - confidence, welch)
    p_value = _p_value(abs(difference) / se, sides, welch)
    return difference - critical * se, difference + critical * se, p_value


def _welch_df(sides: Sequence[tuple[float, float]]) -> float:
    """Satterthwaite's degrees of freedom of a difference of `sides`."""
    used = [(v, df) for v, df in sides if v > 0]
    return sum(v for v, _ in used) ** 2 / sum(v**2 / df for v, df in used)


def _critical(sides: Sequence[tuple[float, float]], alpha: float, welch: bool) -> float:
    """The two-sided critical value at level `alpha` for a difference of `sides`."""
    if welch:
        return t_quantile(alpha / 2, _welch_df(sides))
    used = [(v, df) for v, df in sides if v > 0]
    return sum(v * t_quantile(alpha / 2, df) for v, df in used) / sum(v for v, _ in used)


def _p_value(statistic: float, sides: Sequence[tuple[float, float]], welch: bool) -> float:
    """The `alpha` whose critical value is `statistic` (two-sided)."""
    from scipy import special  # loaded when first needed

    if statistic == 0:
        return 1.0
    if welch:
        return float(2 * special.stdtr(_welch_df(sides), -statistic))

    def excess(log_alpha: float) -> float:
        return _critical(sides, 10.0**log_alpha, welch=False) - statistic

    # The critical value falls as alpha grows (to 0 at alpha 1): bisect its log for the
    # crossing, to 1e-10 (scipy.optimize would cost a quarter second to import).
    low, high = _SMALLEST_LOG_P, 0.0
    if excess(low) < 0:
        return 0.0
    while high - low > 1e-10:
        middle = (low + high) / 2
        low, high = (middle, high) if excess(middle) >= 0 else (low, middle)
    return 10.0 ** ((low + high) / 2)


def compare_seeds(
    values: Sequence[float] | npt.ArrayLike,
    models: Sequence[object] | npt.ArrayLike,
    baseline_values: Sequence[float] | npt.ArrayLike,
    baseline_models: Sequence[object] | npt.ArrayLike,
    *,
    questions: Sequence[object] | npt.ArrayLike | None = None,
    baseline_questions: Sequence[object] | npt.ArrayLike | None = None,
    scale: Scale | None = None,
    confidence: float = 0.95,
) -> Difference:
    """One group's samples against the baseline's (with `questions`, models are averaged
    over their questions first)."""
    share = scale is not None and scale.is_share
    return difference_of(
        seed_means(values, models, questions, share=share),
        seed_means(baseline_values, baseline_models, baseline_questions, share=share),
        confidence=confidence,
    )


def holm(p_values: Sequence[float] | npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm's step-down adjustment (NaN stays NaN and does not count as a test)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    m = len(order)
    steps = p[order] * (m - np.arange(m))
    adjusted[order] = np.minimum(np.maximum.accumulate(steps), 1.0)
    return adjusted


Baseline = str | Mapping[str, str]
"""One group every other group is compared with, or each group's own (`{group: baseline}`:
e.g. fine-tunes of two base models, each against its base)."""


def baseline_pairs(baseline: Baseline, groups: Sequence[str]) -> dict[str, str]:
    """`{group: its baseline}` for the groups compared (a baseline is not compared itself)."""
    if isinstance(baseline, str):
        return {group: baseline for group in groups if group != baseline}
    return {str(group): str(base) for group, base in baseline.items() if group != base}


def baseline_words(baseline: Baseline) -> str:
    """The baseline as a reader sees it: the group, or each group's own."""
    if isinstance(baseline, str):
        return baseline
    pairs = "; ".join(f"{group} against {base}" for group, base in baseline.items())
    return f"each group's own baseline ({pairs})"


def compare_groups(
    frames: Mapping[str, pd.DataFrame],
    baseline: Baseline,
    scores: Mapping[str, Sequence[Score]] | None = None,
    *,
    metrics: Iterable[Metric] = (),
    scales: ScoreScales | None = None,
    confidence: float = 0.95,
    pooled: bool = True,
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every group against `baseline` (or each against its own), per question × score, plus
    (with `pooled`, when a score is asked in two or more questions) a row per score over all
    questions (`question` = `ALL_QUESTIONS`: each model averaged over the questions first,
    then models compared). Columns `COMPARISON_COLUMNS`; `p_adjusted` is Holm-corrected over
    all rows.

    `frames`, `scores`, `metrics` and `scales` are read as in `summarize`. With `by` (grid
    factors), each level of the factors is compared apart, like a question of its own (its
    columns after `question`). Rows appear in the order of the questions, levels, their
    scores and the groups; a pair where either side has no valid sample is left out."""
    groups = list(dict.fromkeys(g for f in frames.values() for g in f["group"].astype(str)))
    pairs = baseline_pairs(baseline, groups)
    for name in [baseline] if isinstance(baseline, str) else [*pairs, *pairs.values()]:
        if name not in groups:
            known = ", ".join(repr(g) for g in groups) or "none"
            raise ValueError(f"baseline group {name!r} is not in the frames (groups: {known})")
    references = set(pairs.values())
    factors = by_columns(by)
    cells, pools = score_cells(frames, scores, metrics, scales, factors)
    sides_of: dict[tuple[str, tuple[str | None, ...], str], dict[str, SeedMeans]] = {}
    scale_of: dict[tuple[str, tuple[str | None, ...], str], Scale] = {}
    for cell in cells:  # per question, levels and score: each group's seed means
        key = (cell.question, cell.levels, cell.name)
        sides = sides_of.setdefault(key, {})
        sides[str(cell.group)] = seed_means(cell.values, cell.models, share=cell.scale.is_share)
        scale_of[key] = cell.scale
    for (levels, group, name), pool in pools.items() if pooled else ():
        key = (ALL_QUESTIONS, levels, name)  # over two or more questions, on one scale
        sides = sides_of.setdefault(key, {})
        if len(pool.cells) >= 2 and not pool.mixed:
            sides[str(group)] = pool.seeds()
            if str(group) in references:
                scale_of[key] = pool.scale
    rows: list[dict[str, Any]] = []
    for (question, levels, name), sides in sides_of.items():
        for group in groups:
            side, reference = sides.get(group), sides.get(pairs.get(group, ""))
            if side is None or reference is None or 0 in (side.n_models, reference.n_models):
                continue
            result = difference_of(side, reference, confidence=confidence)
            row = {"question": question, "score": name, "group": group, "baseline": pairs[group]}
            row |= difference_row(result, scale_of[(question, levels, name)])
            rows.append(row | dict(zip(factors, levels, strict=True)))
    table = pd.DataFrame(rows, columns=with_by(COMPARISON_COLUMNS, factors))
    table["p_adjusted"] = holm(table["p_value"].to_numpy(dtype=float))
    return table


def difference_row(result: Difference, scale: Scale) -> dict[str, Any]:
    """The columns a comparison table gives a difference (its bounds within ± the scale's
    width: no difference can exceed it)."""
    return {
        "n_models": result.n_models,
        "n_models_baseline": result.n_models_baseline,
        "mean": result.mean,
        "mean_baseline": result.mean_baseline,
        "difference": result.difference,
        "ci_low": max(result.low, -scale.width),
        "ci_high": min(result.high, scale.width),
        "p_value": result.p_value,
        "p_adjusted": math.nan,
        "method": result.method,
        "sampling_only": result.sampling_only,
        "scale_low": scale.low,
        "scale_high": scale.high,
    }
