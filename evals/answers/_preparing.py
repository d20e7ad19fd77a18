"""Checks before buying: a question some model would refuse as asked stops with one sentence
instead of a frame of 400s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evals.runner import RunContext, describe_question, ordered_models

if TYPE_CHECKING:
    from evals.runner import Askable, Judge


def judge_params(
    judges: Mapping[str, Judge], label: str, ctx: RunContext
) -> dict[str, dict[str, Any]]:
    """Each judge's request parameters as its model is sent them (capabilities, adapting,
    hooks); `UnsupportedRequestError` when a judge's model would refuse its question."""
    return {
        name: ctx.requests.prepare(
            judge.model,
            judge.request_params(),
            label=f"{judge.type_name} '{name}' of question '{label}'",
            adapt=judge.adapt,
        )
        for name, judge in judges.items()
    }


def check_question(
    question: Askable,
    groups: Mapping[str, Sequence[str]],
    ctx: RunContext,
    *,
    judge: bool = True,
) -> None:
    """`UnsupportedRequestError` if a model of `groups` (or a judge's model, unless
    `judge=False`) would refuse `question` as it is asked; nothing is sent."""
    ctx.requests.prepare_models(
        ordered_models(groups),
        question.request_params(),
        label=describe_question(question),
        adapt=question.adapt,
    )
    if judge:
        judge_params(question.judge_questions(), question.name, ctx)
