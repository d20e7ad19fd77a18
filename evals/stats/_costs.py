"""Cost against score: per group and per model, what a sample cost (answers and judges
apart) beside the mean score with its interval — the view for choosing a model to deploy.

Cost per sample is the answer cost of the rows with a known price over their number (NaN for
a model without a price); the judges' cost is each verdict's price shared among the rows it
grades (`<judge>_cost` columns), so the two add up to what the samples and verdicts cost,
whether they were bought now or read from the cache. A group's score is the same estimate and
interval as the summary's (t over its models' means; over several questions, each model
averaged over them first); a model's is its own (sampling noise only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from evals.stats._sample_costs import PriceShare, row_costs, sample_costs
from evals.stats._scales import Scale
from evals.stats._seeds import seed_interval
from evals.stats._summary import score_columns

__all__ = ["COST_COLUMNS", "cost_table"]

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
"""`level`: `group` (a group's models together) or `model` (one model of the group). Costs in
dollars: in all (`answer_cost`, `judge_cost`), per sample and per 1,000 samples. `mean`,
`ci_low`, `ci_high`: the score over all the run's questions that have it."""


def _costs(rows: pd.DataFrame) -> dict[str, Any]:
    answer = rows["_answer_cost"].to_numpy(dtype=float, na_value=np.nan)
    judge = rows["_judge_cost"].to_numpy(dtype=float, na_value=np.nan)
    return {"n_samples": len(rows), **sample_costs(answer, judge)}


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
    for question, frame in frames.items():
        named = scores[question] if scores is not None else score_columns(frame)
        chosen = question_scores(question, frame, named)
        part = frame[["group", "model"]].copy()
        part["_answer_cost"], part["_judge_cost"] = row_costs(frame, price_share)
        part["_question"] = question
        for score in chosen:
            part[f"_score_{score_name(score)}"] = score_values(frame, score)
        tables.append((part, {score_name(s): scale_of(question, s, scales) for s in chosen}))
    if not tables:
        return pd.DataFrame(columns=COST_COLUMNS)
    scale_sets: dict[str, set[Scale]] = {}
    for _, named_scales in tables:
        for name, scale in named_scales.items():
            scale_sets.setdefault(name, set()).add(scale)
    names = [name for name, used in scale_sets.items() if len(used) == 1]
    combined = pd.concat([part for part, _ in tables], ignore_index=True, sort=False)
    rows: list[dict[str, Any]] = []
    for group, group_rows in combined.groupby("group", sort=False):
        units: list[tuple[str, str | None, pd.DataFrame]] = [("group", None, group_rows)]
        units += [
            ("model", str(model), model_rows)
            for model, model_rows in group_rows.groupby("model", sort=False)
        ]
        for level, model, rows_of in units:
            costs = _costs(rows_of)
            base = {"level": level, "group": group, "model": model, **costs}
            if not names:
                rows.append({**base, "score": None})
            for name in names:
                scale = next(iter(scale_sets[name]))
                column = f"_score_{name}"
                values = rows_of[column].to_numpy(dtype=float, na_value=np.nan)
                interval = seed_interval(
                    values,
                    rows_of["model"].to_numpy(),
                    rows_of["_question"].to_numpy(),
                    scale=scale,
                    confidence=confidence,
                )
                rows.append(
                    {
                        **base,
                        "score": name,
                        "n_models": interval.n_models,
                        "mean": interval.mean,
                        "ci_low": interval.low,
                        "ci_high": interval.high,
                        "sampling_only": interval.sampling_only,
                        "scale_low": scale.low,
                        "scale_high": scale.high,
                    }
                )
    return pd.DataFrame(rows, columns=COST_COLUMNS)
