"""The summary table: one row per question × group × score with its mean, interval, refusal
rate (a missing score without an error) and errors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evals.stats._bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, group_interval, plain_bootstrap
from evals.stats._costs import SAMPLE_COST_COLUMNS, PriceShare, row_costs, sample_costs
from evals.stats._frames import (
    ALL_QUESTIONS,
    Cell,
    Score,
    ScoreScales,
    by_columns,
    question_scores,
    score_cells,
    score_name,
    score_values,
    with_by,
)
from evals.stats._metrics import Metric
from evals.stats._seeds import DEFAULT_METHOD, Interval, Method, interval_row, seed_interval

SUMMARY_COLUMNS = [
    "question",
    "group",
    "score",
    "n_models",
    "n_samples",
    "mean",
    "ci_low",
    "ci_high",
    "refusal_rate",
    "n_errors",
    "sampling_only",
    "method",
    "scale_low",
    "scale_high",
    *SAMPLE_COST_COLUMNS,
]
"""`sampling_only`: the group has one model, so its interval reflects sampling noise only.
`method`: how the interval was made. `scale_low`/`scale_high`: the score's range. The cost
columns: what a sample of the row cost, answers and judges apart (NaN without prices)."""
MODEL_SUMMARY_COLUMNS = [
    "question",
    "group",
    "model",
    "score",
    "n_samples",
    "mean",
    "ci_low",
    "ci_high",
    "refusal_rate",
    "n_errors",
]
REFUSED_ERROR = "the model refused"
"""The `error` of a free-form sample whose model refused (a refusal, not a failure)."""


def _no_error(errors: pd.Series) -> np.ndarray:
    """Per row: no error, or the model refused."""
    error_text = errors.astype(object).where(errors.notna(), None).to_numpy()
    return np.array([e is None or e == "" or e == REFUSED_ERROR for e in error_text], dtype=bool)


def _counts(scores: np.ndarray, no_error: np.ndarray, metric: bool) -> tuple[float, int]:
    """(refusal rate, errors) of one cell; a metric has no refusal rate of its own."""
    if metric:
        return float("nan"), int(np.sum(~no_error))
    missing = np.isnan(scores)
    refusals, answered = int(np.sum(missing & no_error)), int(np.sum(~missing))
    rate = refusals / (answered + refusals) if answered + refusals else float("nan")
    return rate, int(np.sum(missing & ~no_error))


def summarize(
    frames: Mapping[str, pd.DataFrame],
    scores: Mapping[str, Sequence[Score]] | None = None,
    *,
    metrics: Iterable[Metric] = (),
    scales: ScoreScales | None = None,
    method: Method = DEFAULT_METHOD,
    pooled: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    by: str | Sequence[str] | None = None,
    price_share: float | PriceShare = 1.0,
) -> pd.DataFrame:
    """One row per question × group × score (columns `SUMMARY_COLUMNS`), groups in the order
    they appear.

    `frames`: question name → frame; `scores`: each question's columns or `Metric`s (default
    `score_columns`); `metrics` are added to every question that has their scores; `scales`:
    a score's range per question (default `score_scale`); `method`: see `group_interval`.
    `pooled` adds a row per group × score over all questions (`ALL_QUESTIONS`; each model
    averaged over the questions first). `by` (grid factors) splits every row by the factors'
    levels (columns after `question`). Costs are at `price_share` of the list price."""
    factors = by_columns(by)
    rows: list[dict[str, Any]] = []
    paid = {q: row_costs(frame, price_share) for q, frame in frames.items()}
    fine = {q: _no_error(frame["error"]) for q, frame in frames.items()}

    def add(question: str, cells: list[Cell], interval: Interval, how: str) -> None:
        first = cells[0]  # of one scale, group and score
        values = np.concatenate([c.values for c in cells])
        no_error = np.concatenate([fine[c.question][c.rows] for c in cells])
        counts = _counts(values, no_error, isinstance(first.score, Metric))
        costs = sample_costs(
            *(np.concatenate([paid[c.question][i][c.rows] for c in cells]) for i in (0, 1))
        )
        row = {"question": question, "group": first.group, "score": first.name, "method": how}
        row |= {"refusal_rate": counts[0], "n_errors": counts[1], **costs}  # costs: some unused
        row |= interval_row(interval, first.scale)
        rows.append(row | dict(zip(factors, first.levels, strict=True)))

    cells, pools = score_cells(frames, scores, metrics, scales, factors)
    for cell in cells:
        interval = group_interval(
            cell.values,
            cell.models,
            method=method,
            scale=cell.scale,
            resamples=resamples,
            confidence=confidence,
            seed=seed,
        )
        add(cell.question, [cell], interval, method)
    for pool in pools.values() if pooled else ():
        if len(pool.cells) < 2 or pool.mixed:
            continue  # rows over all questions: for a score asked in two or more, on one scale
        interval = seed_interval(*pool.arrays(), scale=pool.scale, confidence=confidence)
        add(ALL_QUESTIONS, pool.cells, interval, "t")
    return pd.DataFrame(rows, columns=with_by(SUMMARY_COLUMNS, factors))


def model_summary(
    frames: Mapping[str, pd.DataFrame],
    scores: Mapping[str, Sequence[Score]] | None = None,
    *,
    metrics: Iterable[Metric] = (),
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """One row per question × group × model × score (`MODEL_SUMMARY_COLUMNS`): each model's
    own interval, a plain bootstrap of its samples (sampling noise only)."""
    metric_list = list(metrics)
    rows: list[tuple[Any, ...]] = []
    for question, frame in frames.items():
        chosen = question_scores(question, frame, scores, metric_list)
        for (group, model), part in frame.groupby(["group", "model"], sort=False):
            for score in chosen:
                values = score_values(part, score)
                interval = plain_bootstrap(
                    values, resamples=resamples, confidence=confidence, seed=seed
                )
                counts = _counts(values, _no_error(part["error"]), isinstance(score, Metric))
                found = (interval.n_samples, interval.mean, interval.low, interval.high, *counts)
                rows.append((question, group, model, score_name(score), *found))
    return pd.DataFrame(rows, columns=MODEL_SUMMARY_COLUMNS)
