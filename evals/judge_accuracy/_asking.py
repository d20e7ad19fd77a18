"""Asking every judge every item: the prompts (a pair in both orders, an answer and its
labels, an answer to rate), one planned request per judge × prompt bought in one fetch, and
each verdict read back into one row. Texts from the file are never re-read as a template."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.cache import RequestBatch
from evals.judge_accuracy._items import JudgeItem, JudgeItems
from evals.questions import RatingJudge
from evals.runner import (
    Planned,
    RunContext,
    RunOutcome,
    endpoints_for,
    fetch,
    is_reasoning_model,
    plan,
)

if TYPE_CHECKING:
    from evals.cache import SampleResult

VERDICT_COLUMNS = ["judge", "item", "order", "position", "picked", "gold", "correct"]
VERDICT_COLUMNS += ["verdict", "error", "cost"]
"""One row per verdict: for a pair the order shown (`ab`: answer_a first, as A) and the
position picked (A or B); the answer picked (a or b), label or rating; the gold one;
`correct` (1, 0, NaN without a verdict); the judge's text; why there is none; its cost."""
TEXT_PARAMS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 16}
"""A pairwise or label verdict: one short, deterministic answer (a reasoning model gets
`REASONING_TOKENS` and no temperature: it thinks before it answers)."""
REASONING_TOKENS = 4096


RATING_PROMPT = """How good is this answer to the question? Rate it from 0 to 100 and reply \
with the number only.

[QUESTION START]
{question}
[QUESTION END]

[ANSWER START]
{answer}
[ANSWER END]"""
"""The rating judge of scored items (a run's own judge of the score replaces it)."""


def pair_prompt(question: str, first: str, second: str) -> str:
    """Two answers to `question`, `first` shown as A: which is better?"""
    return (
        "Here is a question and two answers to it.\n\n"
        f"[QUESTION START]\n{question}\n[QUESTION END]\n\n"
        f"[ANSWER A START]\n{first}\n[ANSWER A END]\n\n"
        f"[ANSWER B START]\n{second}\n[ANSWER B END]\n\n"
        "Which answer is better? Answer with a single letter: A or B."
    )


def label_prompt(question: str, answer: str, labels: Sequence[str]) -> str:
    """An answer to `question`: which of `labels` fits it?"""
    return (
        "Here is a question and an answer to it.\n\n"
        f"[QUESTION START]\n{question}\n[QUESTION END]\n\n"
        f"[ANSWER START]\n{answer}\n[ANSWER END]\n\n"
        "Which label fits the answer?\n"
        f"Labels: {', '.join(labels)}\n"
        "Answer with one of the labels only."
    )


_LEADING_LETTER = re.compile(r"^\W*([AB])\b")
_LETTER = re.compile(r"\b([AB])\b")


def read_position(text: str | None) -> str | None:
    """The answer a pairwise verdict picks, ``A`` or ``B``: a letter standing alone at the
    start (``B``, ``B.``, ``(A)``), else the last standalone A or B (``The answer is B``);
    None when there is none."""
    if not text:
        return None
    leading = _LEADING_LETTER.match(text.strip())
    if leading:
        return leading.group(1)
    found = _LETTER.findall(text)
    return found[-1] if found else None


def read_label(text: str | None, labels: Sequence[str]) -> str | None:
    """The label a verdict gives: the whole text (case, spaces and end punctuation aside),
    else the one label it names as a word; None when it names none or several."""
    if not text:
        return None
    said = text.strip().strip(".!\"'`*").strip().lower()
    by_text = {label.lower(): label for label in labels}
    if said in by_text:
        return by_text[said]
    named = [
        label
        for label in labels
        if re.search(r"(?<![\w-])" + re.escape(label.lower()) + r"(?![\w-])", said)
    ]
    return named[0] if len(named) == 1 else None


@dataclass(frozen=True)
class _Prompt:
    item: JudgeItem
    order: str
    text: str


def _prompts(items: JudgeItems, rating: RatingJudge | None) -> list[_Prompt]:
    prompts: list[_Prompt] = []
    for item in items.items:
        if items.kind == "pair":
            first, second = item.answer_a, item.answer_b
            prompts.append(_Prompt(item, "ab", pair_prompt(item.question, first, second)))
            prompts.append(_Prompt(item, "ba", pair_prompt(item.question, second, first)))
        elif rating is None:
            text = label_prompt(item.question, item.answer, item.options)
            prompts.append(_Prompt(item, "", text))
        else:
            text = rating.render(question=item.question, answer=item.answer)
            prompts.append(_Prompt(item, "", text))
    return prompts


def rating_judge(items: JudgeItems, model: str) -> RatingJudge:
    low, high = items.scale
    prompt = [items.template or RATING_PROMPT]
    return RatingJudge(
        name=items.label, model=model, paraphrases=prompt, min_rating=int(low), max_rating=int(high)
    )


@dataclass
class VerdictPlan:
    """Every verdict request: per judge model (in order) one per prompt (in order)."""

    models: list[str]
    prompts: list[_Prompt]
    ratings: dict[str, RatingJudge]
    """Scored items: each model's rating judge (none for pairs and labels)."""
    planned: list[Planned]


def plan_verdicts(items: JudgeItems, judges: Sequence[str], ctx: RunContext) -> VerdictPlan:
    """One planned request per judge model × prompt; `UnsupportedRequestError` when a judge
    model would refuse it."""
    models = list(dict.fromkeys(judges))
    ratings = {m: rating_judge(items, m) for m in models} if items.kind == "score" else {}
    prompts = _prompts(items, next(iter(ratings.values()), None))
    ctx.models.expect(models)
    sent = {
        model: ctx.requests.prepare(
            model,
            ratings[model].request_params() if ratings else _text_params(model, ctx),
            label=f"judge {model} of {items.source}",
        )
        for model in models
    }
    routes = endpoints_for(models, ctx.router)
    batch = RequestBatch()
    planned = [
        plan(model, routes[model], [{"role": "user", "content": p.text}], sent[model], 1, batch)
        for model in models
        for p in prompts
    ]
    return VerdictPlan(models, prompts, ratings, planned)


def ask_judges(
    items: JudgeItems, verdict_plan: VerdictPlan, ctx: RunContext
) -> tuple[pd.DataFrame, RunOutcome]:
    """Every verdict `plan_verdicts` planned (`VERDICT_COLUMNS`), bought in one fetch."""
    planned = verdict_plan.planned
    fetched = fetch(planned, ctx, labels=items.label, title=f"judges of {items.name}")
    keys = [p.request.cache_key if p.request is not None else "" for p in planned]
    asked = [(m, p) for m in verdict_plan.models for p in verdict_plan.prompts]
    rows: list[dict[str, Any]] = []
    for (model, prompt), one, key, sample in zip(
        asked, planned, keys, fetched.results.first_samples(keys), strict=True
    ):
        row: dict[str, Any] = dict.fromkeys(VERDICT_COLUMNS)
        row.update(judge=model, item=prompt.item.id, order=prompt.order, gold=prompt.item.gold)
        row.update(correct=math.nan, cost=0.0)
        if sample is None:
            row["error"] = (
                one.route_error
                or fetched.outcome.errors.get((key, 0))
                or fetched.outcome.failed_models.get(model)
                or "no verdict (not run)"
            )
        else:
            price = ctx.price(model, sample.prompt_tokens, sample.completion_tokens)
            row["cost"] = math.nan if price is None else price
            _read(row, prompt, sample, verdict_plan.ratings.get(model))
        rows.append(row)
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS), fetched.outcome


def _text_params(model: str, ctx: RunContext) -> dict[str, Any]:
    if is_reasoning_model(model, ctx.requests):
        return {"max_tokens": REASONING_TOKENS}
    return TEXT_PARAMS


def _read(
    row: dict[str, Any], prompt: _Prompt, sample: SampleResult, rating: RatingJudge | None
) -> None:
    item = prompt.item
    if rating is not None:
        read = rating.read_answers([sample])[0]
        if isinstance(read, Exception):
            row["error"] = f"unreadable rating: {read}"
            return
        score = float(read["answer"])
        row["verdict"] = row["picked"] = score
        if math.isnan(score):
            row["error"] = "no rating: too little probability on numbers in range"
        return
    text = sample.content or ""
    row["verdict"] = text
    if prompt.order:
        position = read_position(text)
        if position is None:
            row["error"] = "no A or B in the verdict"
            return
        row["position"] = position
        row["picked"] = "a" if (position == "A") == (prompt.order == "ab") else "b"
    else:
        picked = read_label(text, item.options)
        if picked is None:
            row["error"] = f"none of the labels ({', '.join(item.options)}) in the verdict"
            return
        row["picked"] = picked
    row["correct"] = float(row["picked"] == item.gold)
