"""Judges grade free-form answers: one column per judge, plus `<judge>_question`, the judge
type's extra columns, `<judge>_api_kwargs` and `<judge>_cost` (each verdict's price shared
among the rows it grades). Identical (question, answer) pairs are judged once (answers only,
when the template does not use `{question}`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.answers._frame import CUT_BY_BUDGET, rates, sent_params
from evals.answers._preparing import judge_params
from evals.cache import RequestBatch, encode_text, message_json
from evals.runner import Fetched, Planned, RunContext, endpoints_for, plan

if TYPE_CHECKING:
    from evals.runner import Judge


@dataclass
class JudgePlan:
    """What a question's judges ask of its frame: per judge, each row's prompt as an index
    into its distinct prompts (-1: none), those prompts and where its requests start in
    `planned`; and the parameters each judge's model is sent."""

    asked: dict[str, tuple[list[int], list[str], int]]
    planned: list[Planned]
    sent: dict[str, dict[str, Any]]


_MARK = "\x00"  # never in a template worth cutting; JSON escapes it in any text


def _filled(pieces: list[str], values: Mapping[str, str]) -> str:
    """Literal pieces joined by the values of the placeholder names between them."""
    parts = [pieces[0]]
    for i in range(1, len(pieces), 2):
        parts += (values[pieces[i]], pieces[i + 1])
    return "".join(parts)


class _Prompts:
    """A judge's prompts and their messages' JSON for the cache key, from its template cut
    once at `{question}` and `{answer}`: the template's own text is escaped once, not once
    per prompt, and each answer once for all the judges (`escaped` is shared among them)."""

    def __init__(self, judge: Judge, escaped: dict[str, str]) -> None:
        self.judge, self.escaped = judge, escaped
        system = judge.system
        self.system = [] if system is None else [{"role": "system", "content": system}]
        head = "[" if system is None else f"[{message_json('system', encode_text(system))},"
        before, after = message_json("user", f'"{_MARK}"').split(_MARK)
        cut = judge.render(question=f"{_MARK}question{_MARK}", answer=f"{_MARK}answer{_MARK}")
        pieces = cut.split(_MARK)
        in_json = [p if i % 2 else encode_text(p)[1:-1] for i, p in enumerate(pieces)]
        in_json[0], in_json[-1] = head + before + in_json[0], in_json[-1] + after + "]"
        probe = {"question": 'Q "1"\n{answer}\\', "answer": "A {question} '2'\u00e9"}
        if (
            _MARK in judge.prompt_template
            or not set(pieces[1::2]) <= set(probe)
            or _filled(pieces, probe) != judge.render(**probe)
        ):
            self.pieces: list[str] | None = None  # rendered otherwise: render each prompt
        else:
            self.pieces = pieces
        self.in_json = in_json

    def _escaped(self, text: str) -> str:
        known = self.escaped.get(text)
        if known is None:
            known = self.escaped[text] = encode_text(text)[1:-1]
        return known

    def prompt(self, question: str, answer: str) -> tuple[str, str | None]:
        """The prompt for one answer and its messages' JSON (None: let the cache write it)."""
        if self.pieces is None:
            return self.judge.render(question=question, answer=answer), None
        escaped = {"question": self._escaped(question), "answer": self._escaped(answer)}
        return _filled(self.pieces, {"question": question, "answer": answer}), _filled(
            self.in_json, escaped
        )


def plan_judges(
    frame: pd.DataFrame, label: str, judges: Mapping[str, Judge], ctx: RunContext
) -> JudgePlan:
    """The judges' requests for `frame`'s answers: each distinct prompt of a judge once."""
    answers = frame["answer"].tolist()
    questions = frame["question"].tolist()
    errors = frame["error"].tolist()
    sent = judge_params(judges, label, ctx)
    routes = endpoints_for(list(dict.fromkeys(j.model for j in judges.values())), ctx.router)
    batch = RequestBatch()
    escaped: dict[str, str] = {}
    asked: dict[str, tuple[list[int], list[str], int]] = {}
    planned: list[Planned] = []
    for name, judge in judges.items():
        uses_question = judge.uses_question
        prompts = _Prompts(judge, escaped)
        code_of: dict[tuple[str, str], int] = {}
        distinct: list[str] = []
        texts: list[str | None] = []
        codes: list[int] = []
        for question, answer, error in zip(questions, answers, errors, strict=True):
            if not isinstance(answer, str) or (isinstance(error, str) and error):
                codes.append(-1)
                continue
            pair = (str(question) if uses_question else "", answer)
            code = code_of.get(pair)
            if code is None:
                code = code_of[pair] = len(distinct)
                prompt, text = prompts.prompt(*pair)
                distinct.append(prompt)
                texts.append(text)
            codes.append(code)
        asked[name] = (codes, distinct, len(planned))
        params, route, system = sent[name], routes[judge.model], prompts.system
        planned.extend(
            plan(
                judge.model,
                route,
                [*system, {"role": "user", "content": prompt}],
                params,
                1,
                batch,
                messages_json=text,
            )
            for prompt, text in zip(distinct, texts, strict=True)
        )
    return JudgePlan(asked, planned, sent)


def lay_out_judges(
    frame: pd.DataFrame,
    judges: Mapping[str, Judge],
    planned_judges: JudgePlan,
    fetched: Fetched,
    ctx: RunContext,
) -> pd.DataFrame:
    """`frame` with the columns of the verdicts `fetched` found for `planned_judges`: each
    distinct prompt's verdict read once and shared by every row that asked it."""
    asked, planned, sent = planned_judges.asked, planned_judges.planned, planned_judges.sent
    error_column = frame["error"].tolist()
    added: dict[str, pd.Series] = {}  # every judge's columns, placed after `sample_ix` at once
    for name, judge in judges.items():
        codes, distinct, first = asked[name]
        mine = planned[first : first + len(distinct)]
        keys = [p.request.cache_key if p.request is not None else "" for p in mine]
        samples = fetched.results.first_samples(keys)
        problems: list[str | None] = [None] * len(distinct)
        shares = Counter(c for c in codes if c >= 0)  # rows sharing each verdict
        prices: list[float] = [0.0] * len(distinct)
        per_prompt, per_completion = rates(judge.model, ctx.price)
        readable = []
        for i, sample in enumerate(samples):
            if sample is None:
                problems[i] = (
                    mine[i].route_error
                    or fetched.outcome.errors.get((keys[i], 0))
                    or fetched.outcome.failed_models.get(mine[i].model)
                    or "no verdict (not run)"
                )
                continue
            # paid for, whether its verdict can be read or not
            price = sample.prompt_tokens * per_prompt + sample.completion_tokens * per_completion
            prices[i] = price / shares[i]
            if sample.finish_reason == "length" and not sample.content:
                problems[i] = CUT_BY_BUDGET
            else:
                readable.append(i)
        read = judge.read_answers([samples[i] for i in readable])  # type: ignore[misc]
        verdicts: list[dict[str, Any] | None] = [None] * len(distinct)
        for i, verdict in zip(readable, read, strict=True):
            if isinstance(verdict, Exception):
                problems[i] = f"unreadable cached verdict: {verdict}"
            else:
                verdicts[i] = verdict
        columns = _verdict_columns(judge, codes, verdicts)
        prompts: list[str | None] = [distinct[c] if c >= 0 else None for c in codes]
        for row, code in enumerate(codes):
            if code >= 0 and problems[code] and not error_column[row]:
                error_column[row] = f"judge {name}: {problems[code]}"
        new: dict[str, list[Any]] = {name: columns["answer"], f"{name}_question": prompts}
        new.update({f"{name}_{extra}": columns[extra] for extra in judge.extra_columns})
        was_sent = sent_params(judge.model, sent[name])
        new[f"{name}_api_kwargs"] = [None if c < 0 else was_sent for c in codes]
        costs = [prices[c] if c >= 0 else 0.0 for c in codes]
        for column_name, values in new.items():
            added[column_name] = pd.Series(values, dtype=object, index=frame.index)
        added[f"{name}_cost"] = pd.Series(costs, dtype=float, index=frame.index)
    names = list(frame.columns)
    split = names.index("sample_ix") + 1
    laid_out = pd.DataFrame(
        {
            **{c: frame[c] for c in names[:split]},
            **added,
            **{c: frame[c] for c in names[split:]},
        },
        index=frame.index,
    )
    laid_out["error"] = error_column
    return laid_out


def _verdict_columns(
    judge: Judge, codes: list[int], verdicts: list[dict[str, Any] | None]
) -> dict[str, list[Any]]:
    """The judge's columns, one value per row: the verdict of the row's prompt (rows with
    the same prompt share one verdict's values), `no_answer` where there is none."""
    columns: dict[str, list[Any]] = {}
    for name in ["answer", *judge.extra_columns]:
        missing = judge.no_answer if name == "answer" else None
        values = [None if v is None else v.get(name) for v in verdicts]
        values = [missing if value is None else value for value in values]
        columns[name] = [values[c] if c >= 0 else missing for c in codes]
    return columns
