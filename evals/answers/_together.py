"""Buying the answers of several questions together: one fetch (one progress line, every
question's requests in flight at once) instead of one per question, so that no question's
answers wait for the previous question's judges. `run_questions` does this before asking its
questions one by one; each question then finds its answers in the cache and buys only its
judges (and, once more, any answer that failed here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evals.runner import Fetched, RunContext, fetch, gc_paused, plan_question

if TYPE_CHECKING:
    from evals.answers._protocols import Askable

__all__ = ["buy_answers"]


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
