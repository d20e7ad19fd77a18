"""`run_questions`: ask questions of model groups and write a run folder.

The folder holds `run.json` (questions, groups, settings, versions, times, tokens, cost), one
Parquet file of samples per question, `summary.csv`, `run.log` and `report.html`. Answers come
from the response cache when present, so running the same questions again buys nothing.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from evals.execution import make_context, ordered_models
from evals.question import Question
from evals.runs._folder import (
    REPORT_FILE,
    RUN_FILE,
    RUN_LOG,
    SUMMARY_FILE,
    Run,
    load_run,
    samples_file_name,
)
from evals.runs._provenance import endpoints_of, package_versions, utc_now
from evals.runs._samples_file import write_samples
from evals.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, Method, score_columns, summarize

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


def _frame_totals(frame: pd.DataFrame) -> dict[str, float]:
    return {
        "rows": len(frame),
        "errors": int(frame["error"].notna().sum()),
        "prompt_tokens": float(pd.to_numeric(frame["prompt_tokens"]).sum()),
        "completion_tokens": float(pd.to_numeric(frame["completion_tokens"]).sum()),
        "cost": float(pd.to_numeric(frame["cost"]).sum()),
    }


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
    source: str | None = None,
    on_question: Callable[[str, pd.DataFrame], None] | None = None,
    **df_options: Any,
) -> Run:
    """Ask every question of every group, write the run folder and return it (as `load_run`).

    `samples` overrides each question's `samples_per_paraphrase`; `max_cost` (dollars) caps
    what this run buys over all questions; `models` adds facts per model to run.json (job,
    kind, step, epoch — used by the checkpoint figure). `df_options` go to `Question.df`
    (`cache=`, `router=`, `settings=`, or RunSettings fields).
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
    info: dict[str, Any] = {
        "format": 1,
        "source": source,
        "started": started,
        "groups": group_map,
        "models": {m: dict((models or {}).get(m, {})) for m in all_models},
        "endpoints": endpoints_of(all_models, ctx.router),
        "settings": {
            **ctx.settings.model_dump(mode="json"),
            "samples": samples,
            "max_cost": max_cost,
            "statistics": {"method": method, "resamples": resamples, "seed": seed},
            "cache_dir": str(ctx.cache.directory),
        },
        "versions": package_versions(),
        "questions": [],
    }
    frames: dict[str, pd.DataFrame] = {}
    scores: dict[str, list[str]] = {}
    taken: set[str] = set()
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
                settings = ctx.settings.model_copy(update={"max_cost": budget})
                frame = question.df(
                    group_map,
                    cache=ctx.cache,
                    router=ctx.router,
                    settings=settings,
                    price=ctx.price,
                )
            for warning in caught:
                logger.warning("%s: %s", question.name, warning.message)
            frames[question.name] = frame
            scores[question.name] = score_columns(frame, question)
            samples_file = samples_file_name(question.name, taken)
            write_samples(frame, folder / samples_file)
            totals = _frame_totals(frame)
            logger.info(
                "question %s: %d rows, %d with errors, $%.4f spent so far",
                question.name,
                totals["rows"],
                totals["errors"],
                _spent_cost(before, ctx)[2],
            )
            info["questions"].append(
                {
                    "name": question.name,
                    "type": question.type_name,
                    "scores": scores[question.name],
                    "judges": {
                        name: judge.type_name
                        for name, judge in (getattr(question, "judges", None) or {}).items()
                    },
                    "samples_file": samples_file,
                    "prompts": question.question_texts(),
                    "totals": totals,
                    "definition": question.model_dump(mode="json", exclude_none=True),
                }
            )
            if on_question is not None:
                on_question(question.name, frame)
        summary = summarize(frames, scores, method=method, resamples=resamples, seed=seed)
        summary.to_csv(folder / SUMMARY_FILE, index=False)
        prompt, completion, cost = _spent_cost(before, ctx)
        info["finished"] = utc_now()
        info["seconds"] = round(time.monotonic() - clock, 3)
        info["stopped"] = stopped
        info["totals"] = {
            "rows": sum(len(f) for f in frames.values()),
            "errors": sum(q["totals"]["errors"] for q in info["questions"]),
            "prompt_tokens": sum(q["totals"]["prompt_tokens"] for q in info["questions"]),
            "completion_tokens": sum(q["totals"]["completion_tokens"] for q in info["questions"]),
            "cost": sum(q["totals"]["cost"] for q in info["questions"]),
        }
        info["bought"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cost": cost,
        }
        (folder / RUN_FILE).write_text(json.dumps(info, indent=2, default=str), encoding="utf-8")
        logger.info("done in %.1f s; bought $%.4f (judges included)", info["seconds"], cost)
        run = load_run(folder)
        if report:
            from evals.report import write_report

            write_report(run, folder / REPORT_FILE)
            logger.info("report written to %s", REPORT_FILE)
        return run
    finally:
        _close(logger)
