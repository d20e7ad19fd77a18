"""Asking a question of model groups: plan the requests, buy what is not cached, build the
per-sample frame, judge it, and say what happened (the outcome), judges included. A complete
frame is kept in the cache, and asking again reads it back (see `evals.answers._memo`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals.answers._preparing import judge_params
from evals.runner import RunContext, RunOutcome, fetch, gc_paused, ordered_models, plan_question

if TYPE_CHECKING:
    import pandas as pd

    from evals.answers._protocols import Askable

__all__ = ["Answers", "ask"]


@dataclass
class Answers:
    """A question's answers: one row per sample, and what getting them did."""

    frame: pd.DataFrame
    """One row per sample (`q.df` returns it), judges' columns included."""
    outcome: RunOutcome
    """What was bought (requests, samples, tokens, cost), which models were not asked or
    failed, and whether the run stopped early (answers and judges together)."""


def ask(
    question: Askable,
    groups: Mapping[str, Sequence[str]],
    ctx: RunContext,
    *,
    judge: bool = True,
    keep: bool = True,
) -> Answers:
    """Run what is missing for `question` over `groups` and build its frame (judges
    included, unless `judge=False`: answers only, to be judged later). Nothing is bought
    before every model it uses was checked: that it would take the question as asked
    (answers and judges), and that it exists on its endpoint. A complete frame is kept in
    the cache unless `keep=False` (a frame only built on the way to another)."""
    from evals.answers._frame import build_frame
    from evals.answers._judging import add_judges, judge_models
    from evals.answers._memo import frame_memo

    judges = question.judge_questions() if judge else {}
    ctx.models.expect(ordered_models(groups))
    ctx.models.expect(judge_models(judges))
    sent = judge_params(judges, question.name, ctx)  # a judge that would refuse stops us now
    generation = ctx.cache.generation()  # before any sample is read
    with gc_paused():  # thousands of requests and keys, none of them in a cycle
        _, planned = plan_question(question, groups, ctx.router, ctx.requests)
    memo = frame_memo(question, groups, planned, judges, sent, ctx, generation)
    kept = memo.read(ctx) if memo is not None else None
    if kept is not None:
        return Answers(kept, _outcome_of_kept(question, kept))
    fetched = fetch(planned, ctx, label=question.name, title=question.name)
    outcome = fetched.outcome
    with gc_paused():
        frame = build_frame(question, groups, planned, fetched, ctx.price)
    if question.answer_kind == "text":
        from evals.answers._budget import budget_cuts

        outcome.budget_cuts.update(budget_cuts(frame))
    if judges:
        settings = ctx.settings
        if settings.max_cost is not None:  # the judges get what the answers left of the budget
            settings = settings.updated(max_cost=max(0.0, settings.max_cost - outcome.cost))
        frame, judged = add_judges(
            frame, question.name, judges, ctx, settings=settings, skip=outcome.stopped
        )
        outcome.add(judged.outcome)
    if memo is not None and keep:
        memo.keep(ctx, frame, outcome)
    return Answers(frame, outcome)


def _outcome_of_kept(question: Askable, frame: pd.DataFrame) -> RunOutcome:
    """What asking did when the frame was kept: nothing bought, nothing failed (a kept frame
    is complete); the answers the token budget cut, as the frame shows them."""
    outcome = RunOutcome()
    if question.answer_kind == "text":
        from evals.answers._budget import budget_cuts

        outcome.budget_cuts.update(budget_cuts(frame))
    return outcome
