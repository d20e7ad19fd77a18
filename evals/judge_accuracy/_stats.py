"""How good each judge is: accuracy with a 95% interval whose unit is the item, position bias,
scores against gold scores, and agreement between judges (docs/design/judge-accuracy.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from evals.stats import cohen_kappa, spearman_interval

Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval


@dataclass(frozen=True)
class Share:
    """A share with its 95% interval, and how many units it is over (NaN when none)."""

    value: float
    low: float
    high: float
    n: int

    def as_json(self) -> dict[str, Any]:
        return {"value": _num(self.value), "low": _num(self.low), "high": _num(self.high)}


def _num(value: float) -> float | None:
    return None if math.isnan(value) else value


def wilson(share: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of `share` observed over `n` (possibly effective) trials."""
    if n <= 0 or math.isnan(share):
        return math.nan, math.nan
    denominator = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denominator
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def item_accuracy(
    items: Sequence[str], correct: Sequence[float] | npt.NDArray[np.float64], z: float = Z95
) -> Share:
    """The mean over items of each item's share of correct verdicts (unread ones left out),
    with Wilson's interval at the effective number of verdicts n·p(1−p)/s² (s²: the variance
    of the item scores), kept between the items and the verdicts; `n` is the items."""
    frame = pd.DataFrame({"item": list(items), "correct": np.asarray(correct, dtype=float)})
    frame = frame[frame["correct"].notna()]
    scores = frame.groupby("item", sort=False)["correct"].mean().to_numpy(dtype=float)
    n, verdicts = len(scores), len(frame)
    if n == 0:
        return Share(math.nan, math.nan, math.nan, 0)
    p = float(scores.mean())
    variance = float(scores.var(ddof=1)) if n > 1 else 0.0
    if 0 < p < 1:
        effective = n * p * (1 - p) / variance if variance > 0 else float(verdicts)
        effective = min(max(effective, float(n)), float(verdicts))
    else:
        effective = float(n)
    low, high = wilson(p, effective, z)
    return Share(p, low, high, n)


@dataclass(frozen=True)
class PositionBias:
    """Of the pairs a judge read in both orders: the share where it picked the same position
    both times (`same`, with its interval), and of them the first (A) or the second (B)."""

    same: Share
    first: float
    second: float

    @property
    def preference(self) -> float:
        """`first − second`: how often a verdict is the first-shown answer whatever it says."""
        return self.first - self.second

    def as_json(self) -> dict[str, Any]:
        return {
            "rate": _num(self.same.value),
            "low": _num(self.same.low),
            "high": _num(self.same.high),
            "pairs": self.same.n,
            "first_both_times": _num(self.first),
            "second_both_times": _num(self.second),
            "preference_for_first": _num(self.preference),
        }


def position_bias(verdicts: pd.DataFrame) -> PositionBias:
    """The position bias of one judge's pairwise verdicts (`VERDICT_COLUMNS`)."""
    read = verdicts[verdicts["position"].notna()]
    both = read.pivot_table(index="item", columns="order", values="position", aggfunc="first")
    both = both.dropna() if {"ab", "ba"} <= set(both.columns) else both.iloc[0:0]
    n = len(both)
    if n == 0:
        return PositionBias(Share(math.nan, math.nan, math.nan, 0), math.nan, math.nan)
    first = float(((both["ab"] == "A") & (both["ba"] == "A")).mean())
    second = float(((both["ab"] == "B") & (both["ba"] == "B")).mean())
    same = first + second
    return PositionBias(Share(same, *wilson(same, n), n), first, second)


def mark_scores(verdicts: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Rating verdicts with `correct`: 1 when the rating and the gold score fall on the same
    side of `threshold`, NaN without a rating."""
    rated = pd.to_numeric(verdicts["picked"], errors="coerce")
    gold = pd.to_numeric(verdicts["gold"], errors="coerce")
    same = ((rated >= threshold) == (gold >= threshold)).astype(float)
    return verdicts.assign(correct=same.where(rated.notna()))


def score_fit(verdicts: pd.DataFrame) -> dict[str, Any]:
    """One judge's ratings against the gold scores: mean absolute error, Spearman's ρ."""
    rated = pd.to_numeric(verdicts["picked"], errors="coerce").to_numpy(dtype=float)
    gold = pd.to_numeric(verdicts["gold"], errors="coerce").to_numpy(dtype=float)
    both = ~np.isnan(rated) & ~np.isnan(gold)
    rho, low, high = spearman_interval(rated[both], gold[both])
    mae = float(np.abs(rated[both] - gold[both]).mean()) if both.any() else math.nan
    return {
        "mae": _num(mae),
        "spearman": _num(rho),
        "spearman_low": _num(low),
        "spearman_high": _num(high),
    }


def _categories(verdicts: pd.DataFrame, kind: str, threshold: float) -> pd.Series:
    """Each verdict as a category two judges can agree on, keyed by item and order."""
    read = verdicts[verdicts["picked"].notna()]
    values = read["picked"]
    if kind == "score":
        values = (pd.to_numeric(values, errors="coerce") >= threshold).map(
            {True: "above", False: "below"}
        )
    return pd.Series(values.to_numpy(), index=pd.MultiIndex.from_frame(read[["item", "order"]]))


def judge_agreement(
    verdicts: pd.DataFrame, judges: Sequence[str], kind: str, threshold: float
) -> list[dict[str, Any]]:
    """Per pair of judges, over the verdicts both gave (an item in one order): the share on
    which they agree and Cohen's κ (with its interval when there are two categories)."""
    by_judge = {
        judge: _categories(verdicts[verdicts["judge"] == judge], kind, threshold)
        for judge in judges
    }
    rows: list[dict[str, Any]] = []
    for first, second in combinations(judges, 2):
        paired = pd.concat([by_judge[first], by_judge[second]], axis=1, join="inner").dropna()
        n = len(paired)
        row: dict[str, Any] = {"judge": first, "other": second, "n": n}
        if n == 0:
            rows.append({**row, "agreement": None, "kappa": None})
            continue
        a, b = paired.iloc[:, 0].astype(str), paired.iloc[:, 1].astype(str)
        names = sorted(set(a) | set(b))
        codes = {name: i for i, name in enumerate(names)}
        left: npt.NDArray[np.int64] = np.asarray(a.map(codes), dtype=np.int64)
        right: npt.NDArray[np.int64] = np.asarray(b.map(codes), dtype=np.int64)
        if len(names) <= 2:
            kappa, low, high, _ = cohen_kappa(left, right, 2)
        else:  # labels have no order: plain κ, no interval
            expected = sum((left == i).mean() * (right == i).mean() for i in range(len(names)))
            observed = float((left == right).mean())
            kappa = (observed - expected) / (1 - expected) if expected < 1 else math.nan
            low = high = math.nan
        rows.append(
            {
                **row,
                "agreement": float((a == b).mean()),
                "kappa": _num(kappa),
                "kappa_low": _num(low),
                "kappa_high": _num(high),
            }
        )
    return rows
