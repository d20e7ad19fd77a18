"""`check_judges`: ask every judge model every labelled item in one fetch, score the verdicts
against the gold answers and write the output folder; `estimate_judges`: what it would buy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evals.answers import Estimate, call_bill
from evals.cache import CachedLookup
from evals.errors import RunOptionsError
from evals.experiments import default_run_dir
from evals.judge_accuracy._asking import ask_judges, plan_verdicts
from evals.judge_accuracy._items import JudgeItems, read_items
from evals.judge_accuracy._output import describe, write_output, wrong_items
from evals.judge_accuracy._stats import (
    item_accuracy,
    judge_agreement,
    mark_scores,
    position_bias,
    score_fit,
)
from evals.runner import RunOutcome, missing_calls, run_context
from evals.runs import prepare_folder


@dataclass
class JudgeAccuracy:
    """What `check_judges` found and wrote."""

    path: Path
    """The output folder."""
    items: JudgeItems
    judges: list[dict[str, Any]]
    """Per judge: accuracy (value, low, high), items, verdicts read and unread, cost,
    `position_bias` (pairs) or `mae` and `spearman` (scores), `agreement` with the others."""
    agreement: list[dict[str, Any]]
    """Per pair of judges: verdicts both gave, the share they agree on, Cohen's κ."""
    verdicts: pd.DataFrame
    """Every verdict (`VERDICT_COLUMNS`)."""
    wrong: pd.DataFrame
    outcome: RunOutcome
    threshold: float | None = None
    """Scores: the gold and the judge agree when both are at or above it, or both below."""

    def as_json(self) -> dict[str, Any]:
        """What judges.json holds."""
        outcome = self.outcome
        return {
            "source": self.items.source,
            "kind": self.items.kind,
            "items": len(self.items.items),
            "threshold": self.threshold,
            "method": describe(self),
            "judges": self.judges,
            "agreement": self.agreement,
            "bought": {key: getattr(outcome, key) for key in ("requests", "cached", "cost")},
            "problems": outcome.messages(),
        }


def check_judges(
    items: JudgeItems | str | Path,
    judges: Sequence[str],
    *,
    out: str | Path | None = None,
    threshold: float | None = None,
    **options: Any,
) -> JudgeAccuracy:
    """How well each judge model grades `items` (a `JudgeItems` or a .jsonl/.csv file, checked
    whole before anything is asked), written to `out` (default: a new folder in the lab's
    runs). `threshold` (scores only, default mid-scale) splits a score in two for accuracy;
    `options` as for `Question.df` (`lab=`, `context=`, `max_cost=`, …)."""
    found, models = _inputs(items, judges)
    low, high = found.scale
    if threshold is not None and (found.kind != "score" or not low <= threshold <= high):
        raise RunOptionsError(
            f"threshold {threshold:g} applies only to scored items, within {low:g}–{high:g}"
        )
    if found.kind == "score" and threshold is None:
        threshold = (low + high) / 2
    ctx = run_context(**options)
    planned = plan_verdicts(found, models, ctx)  # a judge that would refuse stops us here
    folder = prepare_folder(
        out if out is not None else default_run_dir(ctx.lab, f"judges-{found.name}")
    )
    verdicts, outcome = ask_judges(found, planned, ctx)
    if threshold is not None:
        verdicts = mark_scores(verdicts, threshold)
    agreement = judge_agreement(verdicts, models, found.kind, threshold or 0.0)
    rows = [_judge_row(verdicts, model, found, agreement) for model in models]
    wrong = wrong_items(verdicts, found)
    result = JudgeAccuracy(folder, found, rows, agreement, verdicts, wrong, outcome, threshold)
    write_output(result)
    return result


def estimate_judges(
    items: JudgeItems | str | Path, judges: Sequence[str], **options: Any
) -> Estimate:
    """What `check_judges(items, judges, **options)` would buy now (nothing is sent): prompts
    counted at about four characters a token, completions at their limit."""
    found, models = _inputs(items, judges)
    ctx = run_context(**options)
    planned = plan_verdicts(found, models, ctx).planned
    keys = [p.request.cache_key for p in planned if p.request is not None]
    cached = CachedLookup(ctx.cache.lookup(keys))
    calls = missing_calls(planned, cached, ctx.settings, [found.label] * len(planned))
    bills = []
    for call in calls:
        params = call.request.params
        completion = int(params.get("max_tokens") or params.get("max_completion_tokens") or 1)
        bills.append(call_bill(call, completion))
    return Estimate.priced(bills, ctx.price, cached_samples=max(0, len(set(keys)) - len(calls)))


def _inputs(items: JudgeItems | str | Path, judges: Sequence[str]) -> tuple[JudgeItems, list[str]]:
    """The items (a file read and checked whole) and the judge models, each once."""
    found = items if isinstance(items, JudgeItems) else read_items(items)
    models = list(dict.fromkeys(judges))
    if not models:
        raise RunOptionsError("no judge model to check", hint="Give --judge-model MODEL.")
    return found, models


def _judge_row(
    verdicts: pd.DataFrame, model: str, items: JudgeItems, agreement: list[dict[str, Any]]
) -> dict[str, Any]:
    mine = verdicts[verdicts["judge"] == model]
    accuracy = item_accuracy(mine["item"].tolist(), mine["correct"].to_numpy(dtype=float))
    shares = [
        a["agreement"]
        for a in agreement
        if model in (a["judge"], a["other"]) and a["agreement"] is not None
    ]
    row: dict[str, Any] = {
        "judge": model,
        "accuracy": accuracy.as_json(),
        "items": accuracy.n,
        "verdicts": int(mine["correct"].notna().sum()),
        "unread": int(mine["correct"].isna().sum()),
        "agreement": sum(shares) / len(shares) if shares else None,
        "cost": float(mine["cost"].fillna(0.0).sum()),
    }
    if items.kind == "pair":
        row["position_bias"] = position_bias(mine).as_json()
    if items.kind == "score":
        row.update(score_fit(mine))
    return row
