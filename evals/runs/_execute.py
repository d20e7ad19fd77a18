"""`run_questions`: ask questions of model groups and write a run folder.

The folder holds `run.json` (questions, groups, settings, versions, times, tokens, cost), one
Parquet file of samples per question, `summary.csv`, `run.log` and `report.html`. Answers come
from the response cache when present, so running the same questions again buys nothing.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from evals.execution import make_context, ordered_models
from evals.question import Question
from evals.runs._folder import REPORT_FILE, RUN_LOG, Run
from evals.runs._provenance import endpoints_of, utc_now
from evals.runs._writing import frame_totals, write_run
from evals.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, Method

__all__ = ["default_run_dir", "run_questions"]


def default_run_dir(name: str = "run") -> Path:
    """`<lab runs dir>/<UTC time>-<name>` (the lab's `runs/`, else `./runs`)."""
    base = Path("runs")
    try:
        from labmgr.settings import load_settings

        base = load_settings().runs_dir
    except Exception:  # no lab: runs go next to the working directory
        pass
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return base / f"{stamp}-{name}"


def _with_samples(question: Question, samples: int | None) -> Question:
    if samples is None:
        return question
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    return question.model_copy(update={"samples_per_paraphrase": samples})


def _spent_tokens(ctx: Any) -> dict[str, tuple[float, float]]:
    """Tokens stored in the cache per model (a delta of two of these is what a run bought)."""
    totals: dict[str, tuple[float, float]] = {}
    for entry in ctx.cache.info().entries:
        prompt, completion = totals.get(entry.model, (0.0, 0.0))
        totals[entry.model] = (prompt + entry.prompt_tokens, completion + entry.completion_tokens)
    return totals


def _spent_cost(before: Mapping[str, tuple[float, float]], ctx: Any) -> tuple[float, float, float]:
    """(prompt tokens, completion tokens, dollars) bought since `before`."""
    prompt = completion = cost = 0.0
    for model, (p, c) in _spent_tokens(ctx).items():
        p0, c0 = before.get(model, (0.0, 0.0))
        dp, dc = p - p0, c - c0
        if dp or dc:
            prompt += dp
            completion += dc
            cost += ctx.price(model, dp, dc) or 0.0
    return prompt, completion, cost


def _file_logger(path: Path) -> logging.Logger:
    logger = logging.getLogger(f"evals.runs.{path.parent.name}.{id(path)}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return logger


def _close(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)


def run_questions(
    questions: Mapping[str, Question] | Sequence[Question],
    groups: Mapping[str, Sequence[str]],
    *,
    out: str | Path | None = None,
    samples: int | None = None,
    max_cost: float | None = None,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    method: Method = "hierarchical",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    report: bool = True,
    by_model: bool = False,
    source: str | None = None,
    **df_options: Any,
) -> Run:
    """Ask every question of every group, write the run folder and return it (as `load_run`).

    `samples` overrides each question's `samples_per_paraphrase`; `max_cost` (dollars) caps
    what this run buys over all questions (judges included; questions not reached are left
    out and `run.info["stopped"]` says why); `models` adds facts per model to run.json (job,
    kind, step, epoch — the checkpoint figure uses `step`); `by_model` also writes per-model
    intervals (`summary_by_model.csv`). `df_options` go to `Question.df`
    (`cache=`, `router=`, `settings=`, `price=`, or RunSettings fields).
    """
    listed = list(questions.values()) if isinstance(questions, Mapping) else list(questions)
    if not listed:
        raise ValueError("no questions to run")
    group_map = {str(name): [str(m) for m in members] for name, members in groups.items()}
    all_models = ordered_models(group_map)
    folder = Path(out) if out is not None else default_run_dir(listed[0].name)
    folder.mkdir(parents=True, exist_ok=True)
    ctx = make_context(**df_options)
    logger = _file_logger(folder / RUN_LOG)
    started, clock = utc_now(), time.monotonic()
    before = _spent_tokens(ctx)
    frames: dict[str, pd.DataFrame] = {}
    asked: dict[str, Question] = {}
    stopped: str | None = None
    try:
        logger.info(
            "run of %d questions over %d models in %d groups",
            len(listed),
            len(all_models),
            len(group_map),
        )
        for question in listed:
            question = _with_samples(question, samples)
            spent = _spent_cost(before, ctx)[2]
            if max_cost is not None and spent >= max_cost:
                stopped = f"max_cost ${max_cost:.4f} reached after ${spent:.4f}"
                logger.warning("%s; not running question %s", stopped, question.name)
                break
            budget = None if max_cost is None else max_cost - spent
            logger.info("question %s (%s)", question.name, question.type_name)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                frame = question.df(
                    group_map,
                    cache=ctx.cache,
                    router=ctx.router,
                    settings=ctx.settings.model_copy(update={"max_cost": budget}),
                    price=ctx.price,
                )
            for warning in caught:
                logger.warning("%s: %s", question.name, warning.message)
                if str(warning.message).startswith("the run stopped early"):
                    stopped = f"{question.name}: {warning.message}"
            frames[question.name] = frame
            asked[question.name] = question
            totals = frame_totals(frame)
            logger.info(
                "question %s: %d rows, %d with errors, $%.4f bought so far",
                question.name,
                totals["rows"],
                totals["errors"],
                _spent_cost(before, ctx)[2],
            )
        if not frames:
            raise ValueError(f"no question ran: {stopped}")
        prompt, completion, cost = _spent_cost(before, ctx)
        info = {
            "source": source,
            "started": started,
            "finished": utc_now(),
            "seconds": round(time.monotonic() - clock, 3),
            "stopped": stopped,
            "endpoints": endpoints_of(all_models, ctx.router),
            "settings": {
                **ctx.settings.model_dump(mode="json"),
                "samples": samples,
                "max_cost": max_cost,
                "cache_dir": str(ctx.cache.directory),
            },
            "bought": {"prompt_tokens": prompt, "completion_tokens": completion, "cost": cost},
        }
        run = write_run(
            folder,
            frames,
            questions=asked,
            groups=group_map,
            models=models,
            method=method,
            resamples=resamples,
            seed=seed,
            report=False,
            by_model=by_model,
            info=info,
        )
        logger.info("done in %.1f s; bought $%.4f (judges included)", info["seconds"], cost)
        if report:
            from evals.report import write_report

            write_report(run, folder / REPORT_FILE)
            logger.info("report written to %s", REPORT_FILE)
        return run
    finally:
        _close(logger)
