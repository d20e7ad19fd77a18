"""The statistics of a run folder, computed from its samples; `analyze_run` recomputes them for
another baseline, interval method or split, asking nothing of any model."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from evals.errors import OutputError, RunOptionsError, describe_os_error
from evals.runs._folder import COMPARISONS_FILE, COSTS_FILE, RUN_FILE, SUMMARY_FILE, Run, load_run
from evals.runs._human import AGREEMENT_FILE, agreement_table
from evals.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    METHODS,
    Baseline,
    Method,
    Metric,
    PriceShare,
    Scale,
    Score,
    compare_groups,
    cost_table,
    default_metrics,
    score_columns,
    summarize,
)

if TYPE_CHECKING:
    from evals.questions import Question


class Keep(Enum):
    """`analyze_run(baseline=KEEP)`: the baseline the run already has."""

    KEEP = "keep"


KEEP = Keep.KEEP


@dataclass(frozen=True)
class ScorePlan:
    """What is summarised of one question: its score columns, its derived metrics, and the
    range of each."""

    columns: list[str]
    metrics: list[Metric] = field(default_factory=list)
    scales: dict[str, Scale] = field(default_factory=dict)

    @property
    def scores(self) -> list[Score]:
        return [*self.columns, *self.metrics]

    def record(self) -> dict[str, Any]:
        """How run.json records the plan (`scores`, `metrics`, `scales`)."""
        return {
            "scores": list(self.columns),
            "metrics": {metric.name: metric.spec() for metric in self.metrics},
            "scales": {
                name: [scale.low, scale.high, *(["share"] if scale.is_share else [])]
                for name, scale in self.scales.items()
                if name in self.columns
            },
        }


def score_plan(
    frame: pd.DataFrame, question: Question | None = None, extra: Iterable[Metric] = ()
) -> ScorePlan:
    """The plan of one question's frame (from the question, else guessed from the frame with
    the default metrics); `extra` metrics are added where the frame has their scores."""
    if question is not None:  # a judge not asked (a run without judges) has no column
        columns = [c for c in score_columns(frame, question) if c in frame.columns]
        metrics = question.derived_metrics()
        scales = question.score_scales()
    else:
        columns = score_columns(frame)
        metrics = default_metrics(columns)
        scales = {}
    chosen = {metric.name: metric for metric in metrics}
    chosen |= {metric.name: metric for metric in extra if metric.applies_to(columns)}
    present = [m for m in chosen.values() if m.applies_to(frame.columns)]
    return ScorePlan(list(columns), present, dict(scales))


def check_baseline(baseline: Baseline | None, groups: Iterable[str]) -> None:
    """`RunOptionsError` unless `baseline` is None, one of `groups`, or a mapping of groups to
    their baselines, all of them groups."""
    names = [str(g) for g in groups]
    named: list[str] = [] if baseline is None or not isinstance(baseline, str) else [baseline]
    if isinstance(baseline, Mapping):
        named = [*baseline.keys(), *baseline.values()]
        if not baseline:
            raise RunOptionsError(
                "the baseline names no group",
                hint="Pass GROUP, or GROUP=BASELINE for each group compared with its own.",
            )
    for name in named:
        if name not in names:
            raise RunOptionsError(
                f"baseline {name!r} is not a group of the run (groups: {', '.join(names)})",
                hint="Pass one of the run's groups with --baseline / baseline=, or "
                "GROUP=BASELINE for a group compared with its own.",
            )


def check_by(by: Sequence[str], factors: Mapping[str, Sequence[str]]) -> list[str]:
    """`by` as a list of grid factors of the run (`factors`: question → its factor names)."""
    names = [str(name) for name in by]
    known = list(dict.fromkeys(f for names_of in factors.values() for f in names_of))
    for name in names:
        if name not in known:
            having = ", ".join(known) if known else "none: no question of the run has a grid"
            raise RunOptionsError(
                f"--by {name!r}: no question of the run has the factor {name!r} "
                f"(its factors: {having})",
                hint="Split by a factor of a grid question (the names under `grid:`).",
            )
    if len(set(names)) != len(names):
        raise RunOptionsError(f"--by names a factor twice: {', '.join(names)}")
    return names


def check_method(method: str) -> Method:
    if method not in METHODS:
        raise RunOptionsError(
            f"interval method {method!r} is unknown; use one of {', '.join(METHODS)}"
        )
    return cast("Method", method)


def price_share_of(settings: Mapping[str, Any] | None) -> PriceShare:
    """The part of the list price a run paid, from its run.json `settings`: the Batch API's
    discount for a run through batches, else 1; judges scored again later (`judge_batch`:
    judge → whether through batches) at their own."""
    settings = settings or {}
    judged = settings.get("judge_batch") or {}
    if not settings.get("batch") and not any(judged.values()):
        return PriceShare()
    from labmgr.pricing import BATCH_DISCOUNT  # the price table loads only when needed

    return PriceShare(
        BATCH_DISCOUNT if settings.get("batch") else 1.0,
        {str(judge): BATCH_DISCOUNT if batch else 1.0 for judge, batch in judged.items()},
    )


def write_statistics(
    folder: Path,
    frames: Mapping[str, pd.DataFrame],
    plans: Mapping[str, ScorePlan],
    *,
    method: Method,
    baseline: Baseline | None,
    resamples: int,
    seed: int,
    by: Sequence[str],
    settings: Mapping[str, Any] | None,
    labels: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Compute and write `summary.csv` (with pooled rows), `costs.csv`, `comparisons.csv`
    (removed without a baseline) and `agreement.csv` (removed without human labels), costs
    at the share of the list price the run's `settings` say it paid; returns run.json's
    `settings.statistics`."""
    price_share = price_share_of(settings)
    scores = {name: plans[name].scores for name in frames}
    scales = {name: plans[name].scales for name in frames}
    summary = summarize(
        frames,
        scores,
        scales=scales,
        method=method,
        pooled=True,
        resamples=resamples,
        seed=seed,
        by=list(by),
        price_share=price_share,
    )
    write_table(folder, SUMMARY_FILE, summary)
    write_table(
        folder, COSTS_FILE, cost_table(frames, scores, scales=scales, price_share=price_share)
    )
    if baseline is not None:
        comparisons = compare_groups(frames, baseline, scores, scales=scales, by=list(by))
    write_table(folder, COMPARISONS_FILE, None if baseline is None else comparisons)
    columns = {name: plan.columns for name, plan in plans.items()}
    metrics = {name: plan.metrics for name, plan in plans.items()}
    agreement = agreement_table(frames, columns, metrics, scales, labels)
    write_table(folder, AGREEMENT_FILE, agreement)
    return {
        "method": method,
        "resamples": resamples,
        "seed": seed,
        "confidence": 0.95,
        "baseline": baseline if baseline is None or isinstance(baseline, str) else dict(baseline),
        "by": list(by),
        "comparisons": "welch / cochran-cox, holm over the run" if baseline else None,
    }


def analyze_run(
    run: Run | str | Path,
    *,
    baseline: Baseline | Keep | None = KEEP,
    method: Method | None = None,
    by: Sequence[str] | Keep = KEEP,
) -> Run:
    """Recompute a run folder's statistics from its samples with `baseline` (None: no
    comparisons), `method` and `by` (default: the run's own), record them in run.json and
    return the run read again."""
    loaded = run if isinstance(run, Run) else load_run(run)
    statistics = loaded.statistics
    chosen_method = check_method(method or loaded.method)
    chosen = loaded.baseline if baseline is KEEP else baseline
    check_baseline(chosen, loaded.groups)
    factors = {name: list(loaded.factor_levels(name)) for name in loaded.questions}
    chosen_by = check_by(loaded.by if isinstance(by, Keep) else by, factors)
    frames = loaded.frames()
    plans = {
        name: ScorePlan(loaded.scores(name), loaded.metrics(name), loaded.scales(name))
        for name in loaded.questions
    }
    info = dict(loaded.info)
    settings = dict(info.get("settings", {}))
    try:
        settings["statistics"] = write_statistics(
            loaded.path,
            frames,
            plans,
            method=chosen_method,
            baseline=chosen,
            resamples=int(statistics.get("resamples", DEFAULT_RESAMPLES)),
            seed=int(statistics.get("seed", DEFAULT_SEED)),
            by=chosen_by,
            settings=settings,
            labels=loaded.human_labels(),
        )
        info["settings"] = settings
        write_run_file(loaded.path, info)
    except OSError as error:
        raise OutputError(
            f"cannot write the statistics of {loaded.path}: {describe_os_error(error)}.",
            hint="Check the run folder's permissions, then run again.",
        ) from None
    return load_run(loaded.path)


def write_table(folder: Path, file: str, table: pd.DataFrame | None) -> None:
    """`table` as the CSV `file` of the run folder; None removes an older run's file."""
    if table is None:
        (folder / file).unlink(missing_ok=True)
    else:
        table.to_csv(folder / file, index=False)


def write_run_file(folder: Path, content: Mapping[str, Any]) -> None:
    """run.json, replaced in one step."""
    temporary = folder / (RUN_FILE + ".tmp")
    temporary.write_text(json.dumps(content, indent=2, default=str), encoding="utf-8")
    temporary.replace(folder / RUN_FILE)
