"""`estimate_run`: what `run_questions` would buy now, question by question (nothing is sent);
the library twin of `labmgr eval run --estimate`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evals.experiments._spec import run_metrics
from evals.runner import run_context
from evals.runs import check_baseline, check_by

if TYPE_CHECKING:
    from evals.answers import Estimate
    from evals.questions import Question
    from evals.stats import Metric

__all__ = ["estimate_run"]


def estimate_run(
    questions: Mapping[str, Question] | Sequence[Question],
    groups: Mapping[str, Sequence[str]],
    *,
    samples: int | None = None,
    metrics: Sequence[Metric | str] = (),
    baseline: str | None = None,
    by: Sequence[str] = (),
    judge: bool = True,
    judge_model: str | None = None,
    **options: Any,
) -> dict[str, Estimate]:
    """`{question name: Estimate}` for the same arguments as `run_questions` (`samples`
    overrides each question's samples per paraphrase; `options` are `Question.ask`'s).
    `metrics`, `baseline` and `by` are checked as the run would check them (they cost
    nothing); `judge=False` leaves the judges out, `judge_model` asks them of that model."""
    listed = list(questions.values()) if isinstance(questions, Mapping) else list(questions)
    if judge_model is not None:
        listed = [question.with_judges(model=judge_model) for question in listed]
    run_metrics(metrics, listed)
    check_baseline(baseline, groups)
    check_by(by, {q.name: list(q.factor_levels()) for q in listed})
    if not judge:
        listed = [question.without_judges() for question in listed]
    ctx = run_context(**options)
    return {
        question.name: (
            question.model_copy(update={"samples_per_paraphrase": samples})
            if samples is not None
            else question
        ).estimate(groups, context=ctx)
        for question in listed
    }
