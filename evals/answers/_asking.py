"""Asking questions of model groups, one pipeline for one question or many: plan every answer
request of every question, fetch them in one go, build the frames, then plan and fetch every
judge request those answers need in one more go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals.answers._preparing import judge_params
from evals.runner import RunContext, RunOutcome, fetch, gc_paused, ordered_models, plan_question

if TYPE_CHECKING:
    import pandas as pd

    from evals.runner import Askable, Judge, Planned, RunSettings


@dataclass
class Answers:
    """A question's answers: one row per sample, and what getting them did."""

    frame: pd.DataFrame
    """One row per sample (`q.df` returns it), judges' columns included."""
    outcome: RunOutcome
    """What was bought, which models failed, whether the run stopped early."""


def ask_questions(
    questions: Sequence[Askable],
    groups: Mapping[str, Sequence[str]],
    ctx: RunContext,
    *,
    judge: bool = True,
) -> tuple[dict[str, pd.DataFrame], RunOutcome]:
    """Each question's frame (judges' columns included unless `judge=False`) and what getting
    them all did. Nothing is bought before every model of every question, judges included,
    was checked: that it takes the question as asked, and that its endpoint has it.

    The cyclic garbage collector is paused but while buying: planning, reading and laying
    out make hundreds of thousands of small acyclic objects."""
    from evals.answers._frame import budget_cuts, build_frame

    with gc_paused():
        judges = {q.name: q.judge_questions() if judge else {} for q in questions}
        ctx.models.expect(ordered_models(groups))
        for question in questions:  # a judge model that would refuse its question stops us now
            ctx.models.expect(j.model for j in judges[question.name].values())
            judge_params(judges[question.name], question.name, ctx)
        planned: dict[str, list[Planned]] = {}
        for question in questions:  # a model that would refuse a question stops us here
            planned[question.name] = plan_question(question, groups, ctx.router, ctx.requests)
        fetched = fetch(
            [p for mine in planned.values() for p in mine],
            ctx,
            labels=[q.name for q in questions for _ in planned[q.name]],
            title=questions[0].name
            if len(questions) == 1
            else f"answers of {len(questions)} questions",
        )
        outcome = fetched.outcome
        frames: dict[str, pd.DataFrame] = {}
        for question in questions:
            frames[question.name] = build_frame(
                question, groups, planned[question.name], fetched, ctx.price
            )
            if question.answer_kind == "text":
                outcome.budget_cuts.update(budget_cuts(frames[question.name]))
        settings = ctx.settings
        if settings.max_cost is not None:  # the judges get what the answers left of the budget
            left = settings.max_cost - outcome.cost
            if left <= 0 and outcome.stopped is None:
                outcome.stopped = f"max_cost ${settings.max_cost:g} reached (${outcome.cost:.4f})"
            settings = settings.updated(max_cost=max(0.0, left))
        skip = outcome.stopped
        if skip is None and settings.batch and outcome.pending:
            skip = "the answers are waiting in batches; judged when they are collected"
        judged, verdicts = judge_frames(frames, judges, ctx, settings=settings, skip=skip)
        frames.update(judged)
        outcome.add(verdicts)
        return frames, outcome


def judge_frames(
    frames: Mapping[str, pd.DataFrame],
    judges: Mapping[str, Mapping[str, Judge]],
    ctx: RunContext,
    *,
    settings: RunSettings | None = None,
    skip: str | None = None,
) -> tuple[dict[str, pd.DataFrame], RunOutcome]:
    """The frames with their judges' columns (every question's verdicts in one fetch), and
    what buying them did. `settings` and `skip` go to `evals.runner.fetch`."""
    from evals.answers._judging import lay_out_judges, plan_judges

    names = [name for name in frames if judges.get(name)]
    if not names:
        return {}, RunOutcome()
    with gc_paused():
        plans = {name: plan_judges(frames[name], name, judges[name], ctx) for name in names}
    fetched = fetch(
        [p for name in names for p in plans[name].planned],
        ctx,
        labels=[f"{name}/judges" for name in names for _ in plans[name].planned],
        title=f"{names[0]}: judges" if len(names) == 1 else f"judges of {len(names)} questions",
        settings=settings,
        skip=skip,
    )
    with gc_paused():
        judged = {
            name: lay_out_judges(frames[name], judges[name], plans[name], fetched, ctx)
            for name in names
        }
    return judged, fetched.outcome


def ask(
    question: Askable,
    groups: Mapping[str, Sequence[str]],
    ctx: RunContext,
    *,
    judge: bool = True,
) -> Answers:
    """`ask_questions` with one question: its frame and what getting it did."""
    frames, outcome = ask_questions([question], groups, ctx, judge=judge)
    return Answers(frames[question.name], outcome)
