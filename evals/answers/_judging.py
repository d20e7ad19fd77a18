"""Judges grade free-form answers: one column per judge (plus `<judge>_question`, one column
per extra value of the judge's type, `<judge>_raw_answer`/`<judge>_probs` for rating judges,
`<judge>_api_kwargs`, what the judge model was sent, and `<judge>_cost`: each verdict's price
shared among the rows it grades, so the column sums to what the verdicts cost). Identical
(question, answer) pairs are judged once (answer only, when the template does not use
`{question}`); verdicts are cached like any request: by judge model, rendered prompt and
parameters.

What a judge is (its template, its parameters, how its verdict is read) is known by the judge
types in `evals.questions`; this module only plans, fetches and lays out the columns.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.answers._frame import CUT_BY_BUDGET, sent_params
from evals.answers._preparing import judge_params
from evals.runner import Fetched, Planned, RunContext, endpoints_for, fetch, plan

if TYPE_CHECKING:
    from evals.answers._protocols import Judge
    from evals.runner import RunSettings

__all__ = ["add_judges", "judge_models"]


def judge_models(judges: Mapping[str, Judge]) -> list[str]:
    """Each judge model once, in the order the judges are given."""
    return list(dict.fromkeys(judge.model for judge in judges.values()))


def _usable(answer: Any, error: Any) -> bool:
    return isinstance(answer, str) and not (isinstance(error, str) and error)


def _pair_key(question: Any, answer: str, uses_question: bool) -> tuple[str, str]:
    return (str(question) if uses_question else "", answer)


def add_judges(
    frame: pd.DataFrame,
    label: str,
    judges: Mapping[str, Judge],
    ctx: RunContext,
    *,
    settings: RunSettings | None = None,
    skip: str | None = None,
) -> tuple[pd.DataFrame, Fetched]:
    """`frame` with the judges' columns (inserted after the base columns), and what fetching
    the verdicts did. `settings` and `skip` go to `evals.runner.fetch`."""
    answers = frame["answer"].tolist()
    questions = frame["question"].tolist()
    errors = frame["error"].tolist()
    sent = judge_params(judges, label, ctx)
    routes = endpoints_for(judge_models(judges), ctx.router)

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
                prompt = rendered[pair] = judge.render(question=text, answer=answer)
            column.append(prompt)
        prompts[name] = column
        params = sent[name]
        for prompt in dict.fromkeys(rendered.values()):
            messages = [{"role": "user", "content": prompt}]
            if judge.system is not None:
                messages.insert(0, {"role": "system", "content": judge.system})
            index_of[(name, prompt)] = len(planned)
            planned.append(plan(judge.model, routes[judge.model], messages, params, 1))

    fetched = fetch(
        planned,
        ctx,
        label=f"{label}/judges",
        title=f"{label}: judges",
        settings=settings,
        skip=skip,
    )

    frame = frame.copy()
    insert_at = list(frame.columns).index("sample_ix") + 1
    error_column = frame["error"].tolist()
    for name, judge in judges.items():
        extras = judge.extra_columns
        verdicts: list[Any] = []
        extra_values: dict[str, list[Any]] = {extra: [] for extra in extras}
        shares = Counter(p for p in prompts[name] if p is not None)
        costs: list[float] = []
        for row, prompt in enumerate(prompts[name]):
            read: dict[str, Any] = {}
            problem: str | None = None
            cost = 0.0
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
                else:
                    price = ctx.price(judge.model, sample.prompt_tokens, sample.completion_tokens)
                    cost = math.nan if price is None else price / shares[prompt]
                    if sample.finish_reason == "length" and not sample.content:
                        problem = CUT_BY_BUDGET  # paid for, but no verdict to read
                    else:
                        read = judge.read_answer([sample])
            costs.append(cost)
            if problem and not error_column[row]:
                error_column[row] = f"judge {name}: {problem}"
            verdict = read.get("answer")
            verdicts.append(judge.no_answer if verdict is None else verdict)
            for extra in extras:
                extra_values[extra].append(read.get(extra))
        new: dict[str, list[Any]] = {name: verdicts, f"{name}_question": list(prompts[name])}
        new.update({f"{name}_{extra}": values for extra, values in extra_values.items()})
        asked = sent_params(judge.model, sent[name])
        new[f"{name}_api_kwargs"] = [None if p is None else asked for p in prompts[name]]
        for offset, (column_name, values) in enumerate(new.items()):
            frame.insert(insert_at + offset, column_name, pd.Series(values, dtype=object))
        insert_at += len(new)
        frame.insert(insert_at, f"{name}_cost", pd.Series(costs, dtype=float))
        insert_at += 1
    frame["error"] = error_column
    return frame, fetched
