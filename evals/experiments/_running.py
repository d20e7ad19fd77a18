"""`run(spec, ctx)` and its keyword twin `run_questions`: ask every question of every group and
write the run folder, `run.log` and the report; `estimate_run` sends nothing."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.answers import ask_questions, check_question
from evals.errors import NoEndpointError, OutputError, RunStopped, describe_os_error
from evals.experiments._reporting import report_run
from evals.experiments._spec import RunSpec
from evals.runner import RunContext, ordered_models, run_context
from evals.runs import (
    REPORT_FILE,
    RUN_LOG,
    Run,
    endpoints_of,
    frame_totals,
    prepare_folder,
    utc_now,
    write_run,
)

if TYPE_CHECKING:
    import pandas as pd

    from evals.answers import Estimate
    from evals.questions import Question
    from evals.stats import Baseline, Metric
    from labmgr.settings import Settings


def default_run_dir(lab: Settings | None, name: str = "run") -> Path:
    """`<lab's runs dir>/<UTC time>-<name>`; without a lab, `runs/` in the working folder."""
    base = lab.runs_dir if lab is not None else Path("runs")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return base / f"{stamp}-{name}"


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


def run_questions(
    questions: Mapping[str, Question] | Sequence[Question],
    groups: Mapping[str, Sequence[str]],
    **options: Any,
) -> Run:
    """Ask every question of every group, write the run folder and return it (as `load_run`).

    `options` are `RunSpec` fields (`out`, `samples`, `max_cost`, `metrics`, `baseline`, `by`,
    `method`, `judge`, `judge_model`, `batch`, `report`, `models`, …), checked before
    anything is bought, and the rest say where the run happens, as for `Question.ask`
    (`lab=`, `home=`, `context=`, `cache=`, `router=`, `settings=`, `adapt=`, …)."""
    fields = {name: options.pop(name) for name in list(options) if name in RunSpec.model_fields}
    run_spec = RunSpec.create(questions, groups, **fields)
    return run(run_spec, run_context(**options))


def estimate_run(
    questions: Mapping[str, Question] | Sequence[Question],
    groups: Mapping[str, Sequence[str]],
    *,
    samples: int | None = None,
    metrics: Sequence[Metric | str] = (),
    baseline: Baseline | None = None,
    by: Sequence[str] = (),
    judge: bool = True,
    judge_model: str | None = None,
    **options: Any,
) -> dict[str, Estimate]:
    """`{question name: Estimate}` for the same arguments as `run_questions`, checked as the
    run would check them; `options` are `Question.ask`'s."""
    spec = RunSpec.create(
        questions,
        groups,
        samples=samples,
        metrics=list(metrics),
        baseline=baseline,
        by=list(by),
        judge=judge,
        judge_model=judge_model,
    )
    ctx = run_context(**options)
    asked = spec.questions if judge else [q.without_judges() for q in spec.questions]
    return {question.name: question.estimate(spec.groups, context=ctx) for question in asked}


def _answered(frame: pd.DataFrame) -> bool:
    """Whether some sample of `frame` was answered (one not judged still has its answer)."""
    return bool(frame["error"].isna().any()) or (
        "answer" in frame and bool(frame["answer"].notna().any())
    )


def run(spec: RunSpec, ctx: RunContext) -> Run:
    """The run `spec` describes, in `ctx`: every question's answers in one fetch (one round of
    batches with `spec.batch`), their judges in one more, then the run folder and its report.
    Every model is checked (capabilities, judges included, and endpoints) before anything is
    bought. `max_cost` caps what the run buys, judges included; `run.info["stopped"]` says
    why it stopped early."""
    changes: dict[str, Any] = {} if spec.max_cost is None else {"max_cost": spec.max_cost}
    if spec.batch:
        changes.update(batch=True, batch_wait=spec.batch_wait)
    ctx = ctx.with_settings(**changes)
    all_models = ordered_models(spec.groups)
    _check_some_model_is_served(all_models, ctx)
    for question in spec.questions:  # all, before a folder is made or anything is bought
        check_question(question, spec.groups, ctx, judge=spec.judge)
    first = spec.questions[0].name
    folder = prepare_folder(spec.out if spec.out is not None else default_run_dir(ctx.lab, first))
    with _run_log(folder / RUN_LOG) as logger:
        started, clock = utc_now(), time.monotonic()
        logger.info(
            "run of %d questions over %d models in %d groups",
            len(spec.questions),
            len(all_models),
            len(spec.groups),
        )
        frames, outcome = ask_questions(spec.questions, spec.groups, ctx, judge=spec.judge)
        for message in outcome.messages():
            logger.warning("%s", message)
        logger.info(
            "bought %d samples in %d requests, $%.4f (judges included)",
            outcome.samples,
            outcome.requests,
            outcome.cost,
        )
        for name, frame in frames.items():
            totals = frame_totals(frame)
            rows, errors = totals["rows"], totals["errors"]
            logger.info("question %s: %d rows, %d with errors", name, rows, errors)
        if outcome.stopped and not any(_answered(f) for f in frames.values()):
            raise RunStopped(f"no question ran: {outcome.stopped}")
        info = {
            "source": spec.source,
            # The absolute path: how `runs_of_questions` finds a question file's runs.
            "source_file": str(Path(spec.source).resolve())
            if spec.source and Path(spec.source).exists()
            else None,
            "started": started,
            "finished": utc_now(),
            "seconds": round(time.monotonic() - clock, 3),
            "stopped": outcome.stopped,
            "endpoints": endpoints_of(all_models, ctx.router),
            "spec": spec.as_json(),
            "settings": {
                **ctx.settings.model_dump(mode="json"),
                "samples": spec.samples,
                "max_cost": spec.max_cost,
                "cache_dir": str(ctx.cache.directory) if ctx.cache.directory else None,
                "cache": ctx.cache.url,
                "judges": "asked" if spec.judge else "skipped",
                "judge_model": spec.judge_model,
                "adapt": ctx.requests.adapt,
                "reasoning_effort": ctx.requests.reasoning_effort,
                "adapters": [adapter.name for adapter in ctx.requests.adapters],
            },
            "bought": {
                "samples": outcome.samples,
                "cached_samples": outcome.cached,
                "prompt_tokens": outcome.prompt_tokens,
                "completion_tokens": outcome.completion_tokens,
                "cost": outcome.cost,
                "price": "batch" if spec.batch else "list",
                "pending": outcome.pending,
            },
        }
        written = write_run(
            folder,
            frames,
            questions={q.name: q for q in spec.questions},
            groups=spec.groups,
            models=spec.models,
            metrics=spec.metrics,
            baseline=spec.baseline,
            method=spec.method,
            resamples=spec.resamples,
            seed=spec.seed,
            by_model=spec.by_model,
            info=info,
            curves=_curves(ctx.lab, spec.groups, spec.models, logger),
            by=spec.by,
        )
        logger.info("done in %.1f s; bought $%.4f (judges included)", info["seconds"], outcome.cost)
        if spec.report:  # figures whose input is unchanged are found in the lab's shared ones
            shared = ctx.lab.figures_dir if ctx.lab is not None else None
            report = report_run(written, out=folder / REPORT_FILE, shared_figures=shared)
            logger.info(
                "report written to %s (%d figures: %d drawn, %d reused)",
                REPORT_FILE,
                report.embedded,
                report.embedded - report.reused,
                report.reused,
            )
        return written


@contextmanager
def _run_log(path: Path) -> Iterator[logging.Logger]:
    """The run's logger, writing `run.log`; an error that ends the run is logged."""
    logger = logging.getLogger(f"evals.runs.{path.parent.name}.{id(path)}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError as error:
        raise OutputError(
            f"cannot write the run log {path}: {describe_os_error(error)}.",
            hint="Give a run folder you can write to with --out / out=.",
        ) from None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    try:
        yield logger
    except Exception as error:
        logger.error("the run ended: %s", getattr(error, "message", None) or error)
        raise
    finally:
        handler.close()
        logger.removeHandler(handler)


def _curves(
    lab: Settings | None,
    groups: Mapping[str, Sequence[str]],
    models: Mapping[str, Mapping[str, Any]],
    logger: logging.Logger,
) -> pd.DataFrame | None:
    """One row per job and step for the run's models whose job the lab has curves of, the
    ``group`` column being the run's group of that model; None without a lab, jobs or curves.
    """
    if lab is None or not models:
        return None
    job_of = {name: str(facts["job"]) for name, facts in models.items() if facts.get("job")}
    group_of = {
        job_of[m]: group for group, members in groups.items() for m in members if m in job_of
    }
    if not group_of:
        return None
    from labmgr.errors import LabmgrError
    from labmgr.finetuning import training_curves

    try:
        curves = training_curves(lab, sorted(group_of), by="job")
    except LabmgrError as error:
        logger.info("no training curves in the run: %s", error.message)
        return None
    curves["group"] = curves["job_id"].map(group_of)
    missing = curves.attrs.get("missing") or []
    if missing:
        logger.info("%d job(s) of the run have no training curves yet", len(missing))
    return curves
