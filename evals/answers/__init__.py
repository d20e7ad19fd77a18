"""Answers: from cached samples to the per-sample frame of a question, judges' verdicts
included, and what asking would cost before anything is bought.

from evals.answers import ask, ask_questions
frames, outcome = ask_questions(questions, groups, ctx)  # ctx: evals.runner.run_context(...)
answers = ask(question, groups, ctx)     # the same with one question: .frame, .outcome

This package knows a question only through the `Askable` and `Judge` protocols of
`evals.runner`, never the types of `evals.questions`.
"""

from typing import TYPE_CHECKING, Any

from evals.answers._asking import Answers, ask, ask_questions, judge_frames
from evals.answers._estimate import Estimate, call_bill, count_tokens, estimate_question
from evals.answers._preparing import check_question
from evals.answers._scoring import (
    average_probabilities,
    rating_score,
    rating_scores,
    token_probabilities,
)

if TYPE_CHECKING:
    from evals.answers._frame import CUT_BY_BUDGET, build_frame

__all__ = [
    "CUT_BY_BUDGET",
    "Answers",
    "Estimate",
    "ask",
    "ask_questions",
    "average_probabilities",
    "build_frame",
    "call_bill",
    "check_question",
    "count_tokens",
    "estimate_question",
    "judge_frames",
    "rating_score",
    "rating_scores",
    "token_probabilities",
]


def __getattr__(name: str) -> Any:
    # The frame imports pandas and pyarrow: loaded on first use.
    if name in ("CUT_BY_BUDGET", "build_frame"):
        from evals.answers import _frame

        return getattr(_frame, name)
    raise AttributeError(f"module 'evals.answers' has no attribute {name!r}")
