"""`run_questions`: ask questions of model groups and write a run folder with its report.

The folder holds `run.json` (questions, groups, settings, versions, times, tokens, cost), one
Parquet file of samples per question, `summary.csv`, `comparisons.csv` (with a baseline),
`run.log` and `report.html`. Answers come
from the response cache when present, so running the same questions again buys nothing.
What a run bought is summed from what each question reports back (its outcome), never read
from the cache.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.answers import buy_answers, buy_judges, check_question
from evals.errors import (
    NoEndpointError,
    OutputError,
    RunOptionsError,
    RunStopped,
    describe_os_error,
)
from evals.experiments._curves import run_curves
from evals.experiments._reporting import report_run
from evals.runner import RunContext, RunOutcome, ordered_models, run_context
from evals.runs import (
    REPORT_FILE,
    RUN_LOG,
    Run,
    check_baseline,
    check_by,
    check_method,
    endpoints_of,
    frame_totals,
    prepare_folder,
    utc_now,
    write_run,
)
from evals.stats import DEFAULT_METHOD, DEFAULT_RESAMPLES, DEFAULT_SEED, Method, Metric

if TYPE_CHECKING:
    import pandas as pd

    from evals.questions import Question
    from labmgr.settings import Settings

__all__ = ["default_run_dir", "run_metrics", "run_questions"]


def default_run_dir(lab: Settings | None, name: str = "run") -> Path:
    """`<lab's runs dir>/<UTC time>-<name>`; without a lab, `runs/` in the working folder."""
    base = lab.runs_dir if lab is not None else Path("runs")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return base / f"{stamp}-{name}"


def _with_samples(question: Question, samples: int | None) -> Question:
    if samples is None:
        return question
    if samples < 1:
        raise RunOptionsError(f"samples must be at least 1, got {samples}")
    return question.model_copy(update={"samples_per_paraphrase": samples})


def _source_file(source: str | None) -> str | None:
    """The questions file's absolute path (how `runs_of_questions` finds a file's runs)."""
    if not source:
        return None
    path = Path(source)
    return str(path.resolve()) if path.exists() else None


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


def run_metrics(metrics: Sequence[Metric | str], questions: Sequence[Question]) -> list[Metric]:
    """`metrics` (Metric objects or texts like `"misaligned: aligned < 30 among coherent >
    50"`) read, each applying to at least one of `questions`; else one `MetricError` or
    `RunOptionsError` naming the metric and the scores the questions have."""
    parsed = [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics]
    columns = [set(question.score_columns()) for question in questions]
    for metric in parsed:
        if not any(metric.applies_to(have) for have in columns):
            known = sorted(set().union(*columns)) if columns else []
            raise RunOptionsError(
                f"metric {str(metric)!r}: no question of the run has the scores "
                f"{' and '.join(metric.columns)} (their scores: {', '.join(known) or 'none'})",
                hint="Name scores the questions have (judge names, or 'answer' for a rating).",
            )
    return parsed


def _check_some_model_is_served(models: list[str], ctx: RunContext) -> None:
    """Nothing can run when no model has an endpoint (no key at all): say so at once."""
    first: NoEndpointError | None = None
    for model in models:
        try:
            ctx.router.endpoint_for(model)
        except NoEndpointError as error:
            first = first or error
        else:
            return
    if first is not None:
        raise NoEndpointError(f"no model of the run can be asked: {first.message}", first.hint)


def _log_together(
    logger: logging.Logger, what: str, questions: int, outcome: RunOutcome, bought: dict[str, Any]
) -> None:
    """Log what buying for every question together did, and add it to the run's totals."""
    for message in outcome.messages():
        logger.warning("%s: %s", what, message)
    for key in bought:
        bought[key] += getattr(outcome, key)
    logger.info(
        "%s of %d questions bought together: %d samples in %d requests, $%.4f",
        what,
        questions,
        outcome.samples,
        outcome.requests,
        outcome.cost,
    )


def _write_report(run: Run, folder: Path, ctx: RunContext, logger: logging.Logger) -> None:
    """The report, its figures found in the lab's shared figures when their input is
    unchanged (a new run of unchanged questions draws none of theirs again)."""
    shared = ctx.lab.figures_dir if ctx.lab is not None else None
    written = report_run(run, out=folder / REPORT_FILE, shared_figures=shared)
    logger.info(
        "report written to %s (%d figures: %d drawn, %d reused)",
        REPORT_FILE,
        written.embedded,
        written.embedded - written.reused,
        written.reused,
    )


def run_questions(
    questions: Mapping[str, Question] | Sequence[Question],
    groups: Mapping[str, Sequence[str]],
    *,
    out: str | Path | None = None,
    samples: int | None = None,
    max_cost: float | None = None,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    metrics: Sequence[Metric | str] = (),
    baseline: str | None = None,
    method: Method = DEFAULT_METHOD,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    report: bool = True,
    by_model: bool = False,
    source: str | None = None,
    by: Sequence[str] = (),
    judge: bool = True,
    judge_model: str | None = None,
    **options: Any,
) -> Run:
    """Ask every question of every group, write the run folder and return it (as `load_run`).

    `samples` overrides each question's `samples_per_paraphrase`; `max_cost` (dollars) caps
    what this run buys over all questions (judges included; questions not reached are left
    out and `run.info["stopped"]` says why); `models` adds facts per model to run.json (job,
    kind, step, epoch — the checkpoint figure uses `step`); `by_model` also writes per-model
    intervals (`summary_by_model.csv`). `out` defaults to the lab's `runs/<time>-<name>`.
    `by` (grid factors) splits the summary and comparisons by the factors' levels.

    `judge=False` asks for the answers only (`score_run` judges them later; run.json says
    the judges were skipped); `judge_model` asks every judge of the run of that model.

    `metrics` (`Metric`s or texts like `"misaligned: aligned < 30 among coherent > 50"`)
    are added to every question with their scores, besides each question's own. `method` is
    the interval (`t` over the seeds' means by default, `hierarchical` or `plain`); with a
    `baseline` group, `comparisons.csv` compares every other group with it. Both are checked
    before anything is bought.

    `options` are those of `Question.ask`: `lab=` or `home=` (the lab, found once here when
    needed), `context=`, or `cache=`, `router=`, `settings=`, `price=`, `adapt=`,
    `reasoning_effort=`, `adapters=` and RunSettings fields. Every question is checked
    against every model's capabilities (judges included) before anything is bought
    (`UnsupportedRequestError`), and every model on its endpoint (`UnknownModelError`).
    """
    listed = list(questions.values()) if isinstance(questions, Mapping) else list(questions)
    if not listed:
        raise RunOptionsError("no questions to run")
    prepared = [_with_samples(question, samples) for question in listed]
    if judge_model is not None:
        prepared = [question.with_judges(model=judge_model) for question in prepared]
    group_map = {str(name): [str(m) for m in members] for name, members in groups.items()}
    extra_metrics = run_metrics(metrics, prepared)
    check_baseline(baseline, group_map)
    check_method(method)
    split = check_by(by, {q.name: list(q.factor_levels()) for q in prepared})
    all_models = ordered_models(group_map)
    ctx = run_context(**options)
    limit = max_cost if max_cost is not None else ctx.settings.max_cost
    _check_some_model_is_served(all_models, ctx)
    ctx.models.expect(all_models)
    for question in prepared:
        if judge:
            ctx.models.expect(j.model for j in question.judge_questions().values())
        check_question(question, group_map, ctx, judge=judge)  # all, before any is bought
    folder = prepare_folder(out if out is not None else default_run_dir(ctx.lab, listed[0].name))
    try:
        logger = _file_logger(folder / RUN_LOG)
    except OSError as error:
        raise OutputError(
            f"cannot write the run log {folder / RUN_LOG}: {describe_os_error(error)}.",
            hint="Give a run folder you can write to with --out / out=.",
        ) from None
    started, clock = utc_now(), time.monotonic()
    bought = {"prompt_tokens": 0.0, "completion_tokens": 0.0, "cost": 0.0, "pending": 0}
    frames: dict[str, pd.DataFrame] = {}
    asked: dict[str, Question] = {}
    stopped: str | None = None
    try:
        logger.info(
            "run of %d questions over %d models in %d groups",
            len(prepared),
            len(all_models),
            len(group_map),
        )
        if limit is None and not ctx.settings.batch and len(prepared) > 1:
            # Every question's answers in one purchase; each question then buys its judges.
            # (With a budget, questions are bought one after another so that those not
            # reached are left out whole; a batch run sends one batch per question.)
            together = buy_answers(prepared, group_map, ctx)
            read = together.results
            ctx = ctx.with_read(read)
            _log_together(logger, "answers", len(prepared), together.outcome, bought)
            if judge and together.outcome.samples and not together.outcome.stopped:
                # New answers have no verdicts yet: buy them all together too. (A run whose
                # answers were all cached judges question by question, reading as it goes.)
                verdicts = buy_judges(prepared, group_map, ctx)
                read.update(verdicts.results)
                _log_together(logger, "judges", len(prepared), verdicts.outcome, bought)
        for question in prepared:
            if stopped is None and limit is not None and bought["cost"] >= limit:
                stopped = f"max_cost ${limit:.4f} reached after ${bought['cost']:.4f}"
            if stopped is not None:
                logger.warning("%s; not running question %s", stopped, question.name)
                break
            budget = None if limit is None else limit - bought["cost"]
            logger.info("question %s (%s)", question.name, question.type_name)
            answers = question.ask(
                group_map, judge=judge, context=ctx.with_settings(max_cost=budget)
            )
            outcome = answers.outcome
            for message in outcome.messages():
                logger.warning("%s: %s", question.name, message)
            for key in bought:
                bought[key] += getattr(outcome, key)
            if outcome.stopped:
                stopped = f"{question.name}: {outcome.stopped}"
            frames[question.name] = answers.frame
            asked[question.name] = question
            totals = frame_totals(answers.frame)
            logger.info(
                "question %s: %d rows, %d with errors, $%.4f bought so far",
                question.name,
                totals["rows"],
                totals["errors"],
                bought["cost"],
            )
        if not frames:
            raise RunStopped(f"no question ran: {stopped}")
        info = {
            "source": source,
            "source_file": _source_file(source),
            "started": started,
            "finished": utc_now(),
            "seconds": round(time.monotonic() - clock, 3),
            "stopped": stopped,
            "endpoints": endpoints_of(all_models, ctx.router),
            "settings": {
                **ctx.settings.model_dump(mode="json"),
                "samples": samples,
                "max_cost": max_cost,
                "cache_dir": str(ctx.cache.directory) if ctx.cache.directory else None,
                "cache": ctx.cache.url,
                "judges": "asked" if judge else "skipped",
                "judge_model": judge_model,
                "adapt": ctx.requests.adapt,
                "reasoning_effort": ctx.requests.reasoning_effort,
                "adapters": [adapter.name for adapter in ctx.requests.adapters],
            },
            "bought": bought,
        }
        run = write_run(
            folder,
            frames,
            questions=asked,
            groups=group_map,
            models=models,
            metrics=extra_metrics,
            baseline=baseline,
            method=method,
            resamples=resamples,
            seed=seed,
            by_model=by_model,
            info=info,
            curves=run_curves(ctx.lab, group_map, models, logger),
            by=split,
        )
        logger.info(
            "done in %.1f s; bought $%.4f (judges included)", info["seconds"], bought["cost"]
        )
        if report:
            _write_report(run, folder, ctx, logger)
        return run
    except Exception as error:
        logger.error("the run ended: %s", getattr(error, "message", None) or error)
        raise
    finally:
        _close(logger)
