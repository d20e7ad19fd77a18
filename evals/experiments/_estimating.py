"""`estimate_run`: what `run_questions` would buy now, question by question (nothing is sent);
the library twin of `labmgr eval run --estimate`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evals.experiments._running import _with_samples
from evals.runner import run_context

if TYPE_CHECKING:
    from evals.answers import Estimate
    from evals.questions import Question

__all__ = ["estimate_run"]


def estimate_run(
    questions: Mapping[str, Question] | Sequence[Question],
    groups: Mapping[str, Sequence[str]],
    *,
    samples: int | None = None,
    **options: Any,
) -> dict[str, Estimate]:
    """`{question name: Estimate}` for the same arguments as `run_questions` (`samples`
    overrides each question's samples per paraphrase; `options` are `Question.ask`'s)."""
    listed = list(questions.values()) if isinstance(questions, Mapping) else list(questions)
    ctx = run_context(**options)
    return {
        question.name: _with_samples(question, samples).estimate(groups, context=ctx)
        for question in listed
    }
