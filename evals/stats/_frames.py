"""The scores of a question's frame: score columns and derived metrics, read as numbers per
row, with the scale each lives on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from evals.stats._metrics import Metric, MetricError
from evals.stats._scales import Scale, score_scale

__all__ = [
    "ALL_QUESTIONS",
    "Score",
    "ScoreScales",
    "question_scores",
    "scale_of",
    "score_name",
    "score_values",
]

ALL_QUESTIONS = "(all)"
"""The `question` of a pooled row: every question, each model averaged over them first."""

Score = str | Metric
"""A score column of a frame (`aligned`, `answer`) or a derived metric."""
ScoreScales = Mapping[str, Mapping[str, Scale]]
"""question → score name → scale (anything not named: `score_scale`'s default)."""


def score_name(score: Score) -> str:
    return score.name if isinstance(score, Metric) else str(score)


def question_scores(
    question: str,
    frame: pd.DataFrame,
    named: Sequence[Score],
    metrics: Iterable[Metric] = (),
) -> list[Score]:
    """`named` plus every metric of `metrics` whose scores the frame has; a name used twice
    is an error."""
    chosen = list(named) + [
        m for m in metrics if m.applies_to(frame.columns) and m not in list(named)
    ]
    seen: set[str] = set()
    for score in chosen:
        name = score_name(score)
        if name in seen:
            raise MetricError(f"question {question!r}: two scores are named {name!r}")
        seen.add(name)
    return chosen


def score_values(frame: pd.DataFrame, score: Score) -> npt.NDArray[np.float64]:
    """The score of every row as a float (NaN: missing or left out of a metric)."""
    if isinstance(score, Metric):
        return score.values(frame)
    return pd.to_numeric(frame[score], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def scale_of(question: str, score: Score, scales: ScoreScales | None) -> Scale:
    """The scale given for `question`'s `score`, else the score's own (`score_scale`)."""
    given = (scales or {}).get(question, {}).get(score_name(score))
    return given if given is not None else score_scale(score)
