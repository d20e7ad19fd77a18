"""Judges grade free-form answers: one column per judge (plus `<judge>_question`, and
`<judge>_raw_answer`/`<judge>_probs` for rating judges). Identical (question, answer) pairs are
judged once (answer only, when the template does not use `{question}`); verdicts are cached
like any request: by judge model, rendered prompt and parameters."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.question_types import FreeFormJudge, RatingJudge
from evals.scoring import rating_score, token_probabilities
from evals.templates import render_template

if TYPE_CHECKING:
    from evals.execution import Context, Planned

__all__ = ["add_judges"]


def _usable(answer: Any, error: Any) -> bool:
    return isinstance(answer, str) and not (isinstance(error, str) and error)


def _pair_key(question: Any, answer: str, uses_question: bool) -> tuple[str, str]:
    return (str(question) if uses_question else "", answer)


def add_judges(
    frame: pd.DataFrame,
    label: str,
    judges: Mapping[str, FreeFormJudge | RatingJudge],
    ctx: Context,
) -> pd.DataFrame:
    """Return `frame` with the judges' columns (inserted after the base columns)."""
    from evals.execution import endpoints_for, fetch, plan

    answers = frame["answer"].tolist()
    questions = frame["question"].tolist()
    errors = frame["error"].tolist()
    judge_models = list(dict.fromkeys(judge.model for judge in judges.values()))
    routes = endpoints_for(judge_models, ctx.router)

    prompts: dict[str, list[str | None]] = {}
    planned: list[Planned] = []
    index_of: dict[tuple[str, str], int] = {}
    for name, judge in judges.items():
        uses_question = judge.uses_question
        rendered: dict[tuple[str, str], str] = {}
        column: list[str | None] = []
        for question, answer, error in zip(questions, answers, errors, strict=True):
            if not _usable(answer, error):
                column.append(None)
                continue
            pair = _pair_key(question, answer, uses_question)
            prompt = rendered.get(pair)
            if prompt is None:
                text = str(question) if uses_question else ""
                prompt = rendered[pair] = render_template(
                    judge.template, question=text, answer=answer
                )
            column.append(prompt)
        prompts[name] = column
        params = judge.request_params()
        for prompt in dict.fromkeys(rendered.values()):
            messages = [{"role": "user", "content": prompt}]
            if judge.system is not None:
                messages.insert(0, {"role": "system", "content": judge.system})
            index_of[(name, prompt)] = len(planned)
            planned.append(plan(judge.model, routes[judge.model], messages, params, 1))

    fetched = fetch(planned, ctx, label=f"{label}/judges", title=f"{label}: judges")

    frame = frame.copy()
    insert_at = list(frame.columns).index("sample_ix") + 1
    error_column = frame["error"].tolist()
    for name, judge in judges.items():
        verdicts: list[Any] = []
        raws: list[Any] = []
        probs: list[Any] = []
        for row, prompt in enumerate(prompts[name]):
            verdict: Any = None
            raw: Any = None
            prob: Any = None
            problem: str | None = None
            if prompt is not None:
                p = planned[index_of[(name, prompt)]]
                key = p.request.cache_key if p.request else ""
                cached = fetched.results.get(key)
                sample = cached.get(0) if cached is not None else None
                if sample is None:
                    problem = (
                        p.route_error
                        or fetched.outcome.errors.get((key, 0))
                        or fetched.outcome.failed_models.get(p.model)
                        or "no verdict (not run)"
                    )
                elif isinstance(judge, RatingJudge):
                    raw = token_probabilities(sample.top_logprobs())
                    score = rating_score(
                        raw,
                        min_rating=judge.min_rating,
                        max_rating=judge.max_rating,
                        refusal_threshold=judge.refusal_threshold,
                    )
                    verdict, prob = score.score, score.probs
                else:
                    verdict = sample.content
            if problem and not error_column[row]:
                error_column[row] = f"judge {name}: {problem}"
            verdicts.append(verdict)
            raws.append(raw)
            probs.append(prob)
        if isinstance(judge, RatingJudge):
            verdicts = [math.nan if v is None else v for v in verdicts]
        new: dict[str, list[Any]] = {name: verdicts, f"{name}_question": list(prompts[name])}
        if isinstance(judge, RatingJudge):
            new[f"{name}_raw_answer"] = raws
            new[f"{name}_probs"] = probs
        for offset, (column_name, values) in enumerate(new.items()):
            frame.insert(insert_at + offset, column_name, pd.Series(values, dtype=object))
        insert_at += len(new)
    frame["error"] = error_column
    return frame
