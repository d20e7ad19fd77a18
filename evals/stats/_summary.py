"""The summary table: one row per question × group × score with its mean and interval.

A *score* is a numeric column of a question's frame: `answer` for ratings, and one column per
rating judge. A missing score without an error is a refusal (a rating with too little
probability on valid numbers, or a model that refused to answer); missing scores with an error
are counted as errors and left out of both the mean and the refusal rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evals.stats._bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Method,
    bootstrap_interval,
    plain_bootstrap,
)

if TYPE_CHECKING:
    from evals.questions import Question

__all__ = [
    "MODEL_SUMMARY_COLUMNS",
    "REFUSED_ERROR",
    "SUMMARY_COLUMNS",
    "model_summary",
    "score_columns",
    "summarize",
]

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
]
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


def score_columns(frame: pd.DataFrame, question: Question | None = None) -> list[str]:
    """The numeric score columns of a question's frame.

    With the question: `answer` for a rating, each rating judge's column for a free-form
    question. Without it, guessed from the frame: every column `X` with an `X_probs` column
    (rating judges), and `answer` when it holds numbers.
    """
    if question is not None:
        return question.score_columns()
    scores = [c for c in frame.columns if f"{c}_probs" in frame.columns]
    if "answer" in frame.columns and pd.api.types.is_numeric_dtype(frame["answer"]):
        scores.insert(0, "answer")
    return scores


def _numeric(series: pd.Series) -> np.ndarray:
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _counts(scores: np.ndarray, errors: pd.Series) -> tuple[float, int]:
    """(refusal rate, errors) of one cell."""
    missing = np.isnan(scores)
    error_text = errors.astype(object).where(errors.notna(), None).to_numpy()
    no_error = np.array([e is None or e == "" or e == REFUSED_ERROR for e in error_text])
    refusals = int(np.sum(missing & no_error))
    failed = int(np.sum(missing & ~no_error))
    answered = int(np.sum(~missing))
    rate = refusals / (answered + refusals) if answered + refusals else float("nan")
    return rate, failed


def summarize(
    frames: Mapping[str, pd.DataFrame],
    scores: Mapping[str, Sequence[str]] | None = None,
    *,
    method: Method = "hierarchical",
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """One row per question × group × score (columns `SUMMARY_COLUMNS`), groups in the order
    they appear. `frames` maps a question name to its frame; `scores` names each question's
    score columns (guessed with `score_columns` when not given)."""
    rows: list[dict[str, Any]] = []
    for question, frame in frames.items():
        names = scores[question] if scores is not None else score_columns(frame)
        for group, part in frame.groupby("group", sort=False):
            for score in names:
                values = _numeric(part[score])
                interval = bootstrap_interval(
                    values,
                    part["model"].to_numpy(),
                    method=method,
                    resamples=resamples,
                    confidence=confidence,
                    seed=seed,
                )
                refusal_rate, failed = _counts(values, part["error"])
                rows.append(
                    {
                        "question": question,
                        "group": group,
                        "score": score,
                        "n_models": interval.n_models,
                        "n_samples": interval.n_samples,
                        "mean": interval.mean,
                        "ci_low": interval.low,
                        "ci_high": interval.high,
                        "refusal_rate": refusal_rate,
                        "n_errors": failed,
                    }
                )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def model_summary(
    frames: Mapping[str, pd.DataFrame],
    scores: Mapping[str, Sequence[str]] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Per-model intervals (a plain bootstrap of each model's samples), one row per
    question × group × model × score (columns `MODEL_SUMMARY_COLUMNS`)."""
    rows: list[dict[str, Any]] = []
    for question, frame in frames.items():
        names = scores[question] if scores is not None else score_columns(frame)
        for (group, model), part in frame.groupby(["group", "model"], sort=False):
            for score in names:
                values = _numeric(part[score])
                interval = plain_bootstrap(
                    values, resamples=resamples, confidence=confidence, seed=seed
                )
                refusal_rate, failed = _counts(values, part["error"])
                rows.append(
                    {
                        "question": question,
                        "group": group,
                        "model": model,
                        "score": score,
                        "n_samples": interval.n_samples,
                        "mean": interval.mean,
                        "ci_low": interval.low,
                        "ci_high": interval.high,
                        "refusal_rate": refusal_rate,
                        "n_errors": failed,
                    }
                )
    return pd.DataFrame(rows, columns=MODEL_SUMMARY_COLUMNS)
