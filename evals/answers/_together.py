"""Buying for several questions together: every question's answers in one fetch, then every
question's judge verdicts in one fetch (one progress line each, all requests of a kind in
flight at once) instead of two fetches per question, so that no question waits for the
slowest request of the one before. `run_questions` does this before asking its questions one
by one; each question then finds what it needs in what was read (and buys, once more,
anything that failed here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evals.runner import Fetched, Planned, RunContext, fetch, gc_paused, plan_question

if TYPE_CHECKING:
    from evals.answers._protocols import Askable

__all__ = ["buy_answers", "buy_judges"]


def buy_answers(
    questions: Sequence[Askable], groups: Mapping[str, Sequence[str]], ctx: RunContext
) -> Fetched:
    """Buy what is missing of every question's answers (not its judges), each sample
    recorded in the cache under its own question: what buying did, and every answer as
    found in the cache (for `RunContext.with_read`, so that no question reads them again)."""
    planned = []
    labels: list[str] = []
    with gc_paused():
        for question in questions:
            _, mine = plan_question(question, groups, ctx.router, ctx.requests)
            planned.extend(mine)
            labels.extend([question.name] * len(mine))
    count = len(questions)
    title = f"answers of {count} question{'s' if count != 1 else ''}"
    return fetch(planned, ctx, label=title, title=title, labels=labels)


def buy_judges(
    questions: Sequence[Askable], groups: Mapping[str, Sequence[str]], ctx: RunContext
) -> Fetched:
    """Buy what is missing of every question's judge verdicts, each recorded under its own
    question's judges (its answers are read from `ctx.read` or the cache, not bought here):
    what buying did, and every verdict as found in the cache."""
    from evals.answers._asking import ask
    from evals.answers._judging import plan_judges

    planned: list[Planned] = []
    labels: list[str] = []
    judged = 0
    for question in questions:
        judges = question.judge_questions()
        if not judges:
            continue
        frame = ask(question, groups, ctx, judge=False, keep=False).frame
        mine = plan_judges(frame, question.name, judges, ctx).planned
        planned.extend(mine)
        labels.extend([f"{question.name}/judges"] * len(mine))
        judged += 1
    title = f"judges of {judged} question{'s' if judged != 1 else ''}"
    return fetch(planned, ctx, label=title, title=title, labels=labels)
