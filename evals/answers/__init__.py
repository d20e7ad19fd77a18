"""Answers: from cached samples to the per-sample frame of a question, judges' verdicts
included, and what asking would cost before anything is bought.

from evals.answers import ask, ask_questions
frames, outcome = ask_questions(questions, groups, ctx)  # ctx: evals.runner.run_context(...)
answers = ask(question, groups, ctx)     # the same with one question
answers.frame                            # one row per sample (what `q.df` returns)
answers.outcome.cost, answers.outcome.stopped

What a question type means (its value columns, how a row is read from its samples, what its
judges render and read) lives on the types in `evals.questions`; this package uses it
through the `Askable` and `Judge` protocols of `evals.runner` and never imports the types.
"""

from typing import TYPE_CHECKING, Any

from evals.answers._asking import Answers, ask, ask_questions, judge_frames
from evals.answers._estimate import Estimate, count_tokens, estimate_question
from evals.answers._preparing import check_question, judge_params
from evals.answers._scoring import (
    RatingScore,
    average_probabilities,
    rating_score,
    rating_scores,
    token_probabilities,
)

if TYPE_CHECKING:
    from evals.answers._budget import budget_cuts
    from evals.answers._frame import (
        BASE_COLUMNS,
        CUT_BY_BUDGET,
        REFUSED_ERROR,
        TAIL_COLUMNS,
        build_frame,
        sent_params,
    )
    from evals.answers._judging import judge_models

__all__ = [
    "BASE_COLUMNS",
    "CUT_BY_BUDGET",
    "REFUSED_ERROR",
    "TAIL_COLUMNS",
    "Answers",
    "Estimate",
    "RatingScore",
    "ask",
    "ask_questions",
    "average_probabilities",
    "budget_cuts",
    "build_frame",
    "check_question",
    "count_tokens",
    "estimate_question",
    "judge_frames",
    "judge_models",
    "judge_params",
    "rating_score",
    "rating_scores",
    "sent_params",
    "token_probabilities",
]

_FRAME = frozenset(
    {"BASE_COLUMNS", "CUT_BY_BUDGET", "REFUSED_ERROR", "TAIL_COLUMNS", "build_frame", "sent_params"}
)
_JUDGING = frozenset({"judge_models"})


def __getattr__(name: str) -> Any:
    # The frame and judging modules import pandas and pyarrow: loaded on first use.
    if name in _FRAME:
        from evals.answers import _frame

        return getattr(_frame, name)
    if name == "budget_cuts":
        from evals.answers import _budget

        return _budget.budget_cuts
    if name in _JUDGING:
        from evals.answers import _judging

        return getattr(_judging, name)
    raise AttributeError(f"module 'evals.answers' has no attribute {name!r}")
