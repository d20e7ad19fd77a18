"""What a sample cost, answers and judges apart, and the cost table: per group and model, that
cost beside the mean score with its interval."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evals.stats._frames import (
    Score,
    ScoreScales,
    question_scores,
    scale_of,
    score_name,
    score_values,
)
from evals.stats._scales import Scale
from evals.stats._seeds import interval_row, seed_interval

SAMPLE_COST_COLUMNS = [
    "answer_cost_per_sample",
    "judge_cost_per_sample",
    "answer_cost_per_1k",
    "judge_cost_per_1k",
]
"""Dollars per sample and per 1,000 samples, the answers' and the judges' apart."""


@dataclass(frozen=True)
class PriceShare:
    """The part of the list price a run paid for its answers, and for each judge's verdicts
    that were bought another way (a judge not named paid what the answers paid)."""

    answers: float = 1.0
    judges: Mapping[str, float] = field(default_factory=dict)

    def judge(self, name: str) -> float:
        """What judge `name`'s verdicts paid of the list price."""
        return float(self.judges.get(name, self.answers))


def row_costs(
    frame: pd.DataFrame, price_share: float | PriceShare = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's (answer cost, judge cost) in dollars at `price_share` of the list price, as
    float arrays; a frame without a `cost` column (built by hand) has NaN answer costs."""
    share = price_share if isinstance(price_share, PriceShare) else PriceShare(float(price_share))
    answer = np.full(len(frame), np.nan)
    if "cost" in frame.columns:
        answer = pd.to_numeric(frame["cost"], errors="coerce").to_numpy(float, na_value=np.nan)
    columns = [str(c) for c in frame.columns]  # a judge's `<judge>_cost` has `<judge>_question`
    judges = [c for c in columns if c.endswith("_cost") and f"{c[:-5]}_question" in columns]
    if judges:
        paid = frame[judges].apply(pd.to_numeric, errors="coerce")
        for column in judges:
            paid[column] = paid[column] * share.judge(column.removesuffix("_cost"))
        judge = paid.sum(axis=1, skipna=False).to_numpy(dtype=float, na_value=np.nan)
    else:
        judge = np.zeros(len(frame))
    return answer * share.answers, judge


def sample_costs(answer: np.ndarray, judge: np.ndarray) -> dict[str, float]:
    """Rows' answer and judge costs in all (`answer_cost`, `judge_cost`) and per sample and per
    1,000 samples (`SAMPLE_COST_COLUMNS`); NaN where no row's cost is known."""
    costs: dict[str, float] = {}
    for kind, paid in (("answer", answer), ("judge", judge)):
        known = paid[~np.isnan(paid)]
        total = float(known.sum()) if known.size else math.nan
        per = total / known.size if known.size else math.nan
        costs |= {f"{kind}_cost": total, f"{kind}_cost_per_sample": per}
        costs[f"{kind}_cost_per_1k"] = per * 1000
    return costs


COST_COLUMNS = [
    "level",
    "group",
    "model",
    "score",
    "n_samples",
    "answer_cost",
    "judge_cost",
    "answer_cost_per_sample",
    "judge_cost_per_sample",
    "answer_cost_per_1k",
    "judge_cost_per_1k",
    "n_models",
    "mean",
    "ci_low",
    "ci_high",
    "sampling_only",
    "scale_low",
    "scale_high",
]
"""`level`: `group` or `model`. Costs in dollars: in all, per sample and per 1,000 samples.
`mean`, `ci_low`, `ci_high`: the score over all the run's questions that have it."""


def cost_table(
    frames: Mapping[str, pd.DataFrame],
    scores: Mapping[str, Sequence[Score]] | None = None,
    *,
    scales: ScoreScales | None = None,
    confidence: float = 0.95,
    price_share: float | PriceShare = 1.0,
) -> pd.DataFrame:
    """One row per group and per model of each group, for each score asked on one scale in
    every question that has it (columns `COST_COLUMNS`; see the module docstring). Without
    any score, one row per group and model with costs only (`score` empty). Costs are at
    `price_share` of the list price (see `row_costs`)."""
    tables = []
    scale_sets: dict[str, set[Scale]] = {}
    for question, frame in frames.items():
        part = frame[["group", "model"]].copy()
        part["_answer"], part["_judge"] = row_costs(frame, price_share)
        part["_question"] = question
        for score in question_scores(question, frame, scores):
            part[f"_score_{score_name(score)}"] = score_values(frame, score)
            scale_sets.setdefault(score_name(score), set()).add(scale_of(question, score, scales))
        tables.append(part)
    if not tables:
        return pd.DataFrame(columns=COST_COLUMNS)
    names = [name for name, used in scale_sets.items() if len(used) == 1]
    combined = pd.concat(tables, ignore_index=True, sort=False)
    rows: list[dict[str, Any]] = []
    for group, group_rows in combined.groupby("group", sort=False):
        units: list[tuple[str, str | None, pd.DataFrame]] = [("group", None, group_rows)]
        units += [
            ("model", str(model), model_rows)
            for model, model_rows in group_rows.groupby("model", sort=False)
        ]
        for level, model, rows_of in units:
            paid = (rows_of[c].to_numpy(float, na_value=np.nan) for c in ("_answer", "_judge"))
            costs = {"n_samples": len(rows_of), **sample_costs(*paid)}
            base = {"level": level, "group": group, "model": model, **costs}
            if not names:
                rows.append({**base, "score": None})
            for name in names:
                scale = next(iter(scale_sets[name]))
                columns = (f"_score_{name}", "model", "_question")
                samples = (rows_of[c].to_numpy() for c in columns)
                interval = seed_interval(*samples, scale=scale, confidence=confidence)
                rows.append({**interval_row(interval, scale), **base, "score": name})
    return pd.DataFrame(rows, columns=COST_COLUMNS)
