"""`estimate_run`: what `run_questions` would buy now, question by question (nothing is sent);
the library twin of `labmgr eval run --estimate`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evals.experiments._spec import RunSpec
from evals.runner import run_context

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
    return {
        question.name: (question if judge else question.without_judges()).estimate(
            spec.groups, context=ctx
        )
        for question in spec.questions
    }
