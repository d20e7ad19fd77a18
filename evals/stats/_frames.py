"""The scores of a question's frame: score columns and derived metrics, read as numbers per
row, with the scale each lives on; and the cells every table reads them in (`score_cells`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from evals.stats._metrics import Metric, MetricError
from evals.stats._scales import Scale, score_scale
from evals.stats._seeds import SeedMeans, seed_means

if TYPE_CHECKING:
    from evals.questions import Question

ALL_QUESTIONS = "(all)"
"""The `question` of a pooled row: every question, each model averaged over them first."""

Score = str | Metric
"""A score column of a frame (`aligned`, `answer`) or a derived metric."""
ScoreScales = Mapping[str, Mapping[str, Scale]]
"""question → score name → scale (anything not named: `score_scale`'s default)."""


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


@dataclass(frozen=True)
class Cell:
    """One question's score over the rows of one group at one level of the grid factors."""

    question: str
    levels: tuple[str | None, ...]
    group: Any
    score: Score
    scale: Scale
    rows: npt.NDArray[np.intp]
    """Positions in the question's frame."""
    values: npt.NDArray[np.float64]
    models: npt.NDArray[Any]

    @property
    def name(self) -> str:
        return score_name(self.score)


@dataclass
class Pool:
    """A score's cells gathered over questions; `mixed` when the questions gave the score
    different scales (then it is not pooled)."""

    scale: Scale
    cells: list[Cell] = field(default_factory=list)
    mixed: bool = False

    def add(self, cell: Cell) -> Pool:
        self.mixed |= cell.scale != self.scale
        self.cells.append(cell)
        return self

    def arrays(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[Any], npt.NDArray[Any]]:
        """Every sample's value, model and question."""
        return (
            np.concatenate([c.values for c in self.cells]),
            np.concatenate([c.models for c in self.cells]),
            np.concatenate([np.full(len(c.rows), c.question, dtype=object) for c in self.cells]),
        )

    def seeds(self) -> SeedMeans:
        """Each model averaged within each question, then over its questions."""
        return seed_means(*self.arrays(), share=self.scale.is_share)


def score_cells(
    frames: Mapping[str, pd.DataFrame],
    scores: Mapping[str, Sequence[Score]] | None,
    metrics: Iterable[Metric],
    scales: ScoreScales | None,
    by: Sequence[str] = (),
) -> tuple[list[Cell], dict[tuple[tuple[str | None, ...], Any, str], Pool]]:
    """Every question's scores split by the levels of `by` (as `level_parts`), then by group
    (as the groups appear), each question's scores last; and the cells pooled over questions
    by levels, group and score, in the order first seen."""
    metric_list = list(metrics)
    cells: list[Cell] = []
    pools: dict[tuple[tuple[str | None, ...], Any, str], Pool] = {}
    for question, frame in frames.items():
        chosen = question_scores(question, frame, scores, metric_list)
        values = {score_name(s): score_values(frame, s) for s in chosen}
        models = frame["model"].to_numpy()
        for levels, level_rows in level_parts(frame, by):
            groups = frame.iloc[level_rows].groupby("group", sort=False).indices
            for group, positions in groups.items():
                rows = level_rows[positions]
                for score in chosen:
                    name, scale = score_name(score), scale_of(question, score, scales)
                    part = (rows, values[name][rows], models[rows])
                    cell = Cell(question, levels, group, score, scale, *part)
                    cells.append(cell)
                    pools.setdefault((levels, group, name), Pool(scale)).add(cell)
    return cells, pools


def score_name(score: Score) -> str:
    return score.name if isinstance(score, Metric) else str(score)


def question_scores(
    question: str,
    frame: pd.DataFrame,
    scores: Mapping[str, Sequence[Score]] | None,
    metrics: Iterable[Metric] = (),
) -> list[Score]:
    """The question's scores (`scores[question]`, else `score_columns`) plus every metric of
    `metrics` whose scores the frame has; a name used twice is an error."""
    named = list(scores[question]) if scores is not None else score_columns(frame)
    chosen = named + [m for m in metrics if m.applies_to(frame.columns) and m not in named]
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


def by_columns(by: str | Sequence[str] | None) -> list[str]:
    """`by` as a list of factor names (a single name, several, or none)."""
    return [by] if isinstance(by, str) else [str(name) for name in by or ()]


def with_by(columns: Sequence[str], by: Sequence[str]) -> list[str]:
    """A table's columns with the factor columns `by` right after `question`."""
    at = list(columns).index("question") + 1
    return [*columns[:at], *by, *columns[at:]]


def level_parts(
    frame: pd.DataFrame, by: Sequence[str]
) -> list[tuple[tuple[str | None, ...], npt.NDArray[np.intp]]]:
    """The frame's rows split by the levels of `by` (in the order the levels first appear,
    the first factor slowest), each with its row positions; a factor the frame does not have
    is None. Without `by`, one part holding every row."""
    present = [name for name in by if name in frame.columns]
    if not present:
        return [((None,) * len(by), np.arange(len(frame)))]
    codes = [pd.factorize(frame[name].astype(str), sort=False) for name in present]
    positions = pd.Series(np.arange(len(frame)))
    parts = positions.groupby([code for code, _ in codes], sort=True).indices
    found: list[tuple[tuple[str | None, ...], npt.NDArray[np.intp]]] = []
    for key, rows in parts.items():
        numbers = key if isinstance(key, tuple) else (key,)
        level = {
            name: str(uniques[number])
            for name, number, (_, uniques) in zip(present, numbers, codes, strict=True)
        }
        found.append((tuple(level.get(name) for name in by), np.asarray(rows)))
    return found


def folded_levels(table: pd.DataFrame, by: str | Sequence[str] | None) -> pd.DataFrame:
    """A summary or comparison table split by grid factors (`by`), with each row's levels
    written into its question (`rent · perspective=tenant`), so tables and figures show a
    level like a question."""
    names = by_columns(by)
    present = [name for name in names if name in table.columns]
    if not present or table.empty:
        return table
    labels = (
        table["question"].astype(str).map(lambda q: "all questions" if q == ALL_QUESTIONS else q)
    )
    for name in present:
        level = table[name]
        labels = labels.where(level.isna(), labels + " · " + name + "=" + level.astype(str))
    return table.assign(question=labels)
