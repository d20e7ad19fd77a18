"""What a sample cost: each row's answer cost and judge cost, and their means per sample and per
1,000 samples, as the summary and the cost table show them beside a score.

A row's answer cost is its `cost` column (NaN for a model without a price); its judge cost is
the sum of its `<judge>_cost` columns (each verdict's price shared among the rows it grades;
NaN when a judge model has no price, 0 when the question has no judges). Per sample means
over the rows whose cost is known; a cached answer counts what its tokens cost, as if bought.
`price_share` is the part of the list price the run pays: `labmgr.pricing.BATCH_DISCOUNT` for
a run through the Batch API (its cached rows count as if bought the same way), 1 otherwise;
a `PriceShare` when a judge's verdicts were bought another way than the answers (a batch
run judged again later without batches).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["SAMPLE_COST_COLUMNS", "PriceShare", "judge_cost_columns", "row_costs", "sample_costs"]

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

    @classmethod
    def of(cls, share: float | PriceShare) -> PriceShare:
        return share if isinstance(share, PriceShare) else cls(float(share))

    def judge(self, name: str) -> float:
        """What judge `name`'s verdicts paid of the list price."""
        return float(self.judges.get(name, self.answers))


def judge_cost_columns(frame: pd.DataFrame) -> list[str]:
    """The `<judge>_cost` columns of a frame (a judge's column has `<judge>_question` too)."""
    return [
        str(c)
        for c in frame.columns
        if str(c).endswith("_cost") and f"{str(c).removesuffix('_cost')}_question" in frame.columns
    ]


def row_costs(
    frame: pd.DataFrame, price_share: float | PriceShare = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's (answer cost, judge cost) in dollars at `price_share` of the list price, as
    float arrays; a frame without a `cost` column (built by hand) has NaN answer costs."""
    share = PriceShare.of(price_share)
    if "cost" in frame.columns:
        answer = pd.to_numeric(frame["cost"], errors="coerce").to_numpy(
            dtype=float, na_value=np.nan
        )
    else:
        answer = np.full(len(frame), np.nan)
    judges = judge_cost_columns(frame)
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
    answered, judged = ~np.isnan(answer), ~np.isnan(judge)
    answer_total = float(answer[answered].sum()) if answered.any() else float("nan")
    judge_total = float(judge[judged].sum()) if judged.any() else float("nan")
    per_answer = answer_total / int(answered.sum()) if answered.any() else float("nan")
    per_judge = judge_total / int(judged.sum()) if judged.any() else float("nan")
    return {
        "answer_cost": answer_total,
        "judge_cost": judge_total,
        "answer_cost_per_sample": per_answer,
        "judge_cost_per_sample": per_judge,
        "answer_cost_per_1k": per_answer * 1000,
        "judge_cost_per_1k": per_judge * 1000,
    }
