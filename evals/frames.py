"""The DataFrame of a question: one row per sample, stable columns, deterministic order
(groups as given, models as given, paraphrase, sample)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.question_types import NextToken, Rating
from evals.requests import SampleResult
from evals.scoring import average_probabilities, rating_score, token_probabilities

if TYPE_CHECKING:
    from evals.execution import Fetched, Planned, PriceFunction
    from evals.question import Question

__all__ = ["BASE_COLUMNS", "TAIL_COLUMNS", "build_frame"]

BASE_COLUMNS = ["model", "group", "answer", "question", "paraphrase_ix", "sample_ix"]
TAIL_COLUMNS = ["finish_reason", "error", "prompt_tokens", "completion_tokens", "cost"]
_NOT_RUN = "no answer (not run)"


class _RowBuilder:
    """Per-(model, conversation, row sample) values, computed once and shared by groups."""

    def __init__(self, question: Question, price: PriceFunction) -> None:
        self.question = question
        self.price = price
        self.is_rating = isinstance(question, Rating)
        self.is_next_token = isinstance(question, NextToken)

    def row(
        self,
        model: str,
        samples: list[SampleResult | None],
        errors: list[str | None],
    ) -> dict[str, Any]:
        found = [s for s in samples if s is not None]
        error = next((e for e in errors if e), None)
        if len(found) < len(samples):
            error = error or _NOT_RUN
        prompt = sum(s.prompt_tokens for s in found)
        completion = sum(s.completion_tokens for s in found)
        cost = self.price(model, prompt, completion) if found else None
        values: dict[str, Any] = {
            "answer": None,
            "finish_reason": found[-1].finish_reason if found else None,
            "error": None,
            "prompt_tokens": prompt if found else math.nan,
            "completion_tokens": completion if found else math.nan,
            "cost": math.nan if cost is None else cost,
        }
        if self.is_rating:
            values["raw_answer"] = None
            values["probs"] = None
        if len(found) < len(samples):
            values["error"] = error
            return values
        try:
            self._fill_answer(values, found)
        except (ValueError, TypeError, KeyError) as failure:
            values["answer"] = None
            values["error"] = f"unreadable cached sample: {failure}"
        return values

    def _fill_answer(self, values: dict[str, Any], found: list[SampleResult]) -> None:
        question = self.question
        if isinstance(question, Rating):
            raw = token_probabilities(found[0].top_logprobs())
            score = rating_score(
                raw,
                min_rating=question.min_rating,
                max_rating=question.max_rating,
                refusal_threshold=question.refusal_threshold,
            )
            values["answer"] = math.nan if score.score is None else score.score
            values["raw_answer"] = raw
            values["probs"] = score.probs
        elif isinstance(question, NextToken):
            averaged = average_probabilities(
                (token_probabilities(s.top_logprobs()) for s in found),
                as_logprobs=not question.convert_to_probs,
            )
            values["answer"] = averaged
        else:
            values["answer"] = found[0].content
            if found[0].finish_reason == "refusal":
                values["error"] = "the model refused"


def build_frame(
    question: Question,
    groups: Mapping[str, list[str]],
    planned: list[Planned],
    fetched: Fetched,
    price: PriceFunction,
) -> pd.DataFrame:
    builder = _RowBuilder(question, price)
    texts = question.question_texts()
    n_conversations = len(texts)
    rows_per_conversation = question.samples_per_paraphrase
    per_row = question.cached_samples_per_row
    errors = fetched.outcome.errors
    by_model: dict[str, list[list[dict[str, Any]]]] = {}
    for index, p in enumerate(planned):
        conversation = index % n_conversations
        bucket = by_model.setdefault(p.model, [])
        cached = fetched.results.get(p.request.cache_key, {}) if p.request else {}
        key = p.request.cache_key if p.request else ""
        model_error = fetched.outcome.failed_models.get(p.model)
        rows = []
        for row_ix in range(rows_per_conversation):
            ixs = range(row_ix * per_row, (row_ix + 1) * per_row)
            samples = [cached.get(ix) for ix in ixs]
            row_errors = [p.route_error or errors.get((key, ix)) or model_error for ix in ixs]
            rows.append(builder.row(p.model, samples, row_errors))
        if len(bucket) <= conversation:
            bucket.append(rows)
    columns: dict[str, list[Any]] = {name: [] for name in BASE_COLUMNS}
    extra = ["raw_answer", "probs"] if builder.is_rating else []
    for name in [*extra, *TAIL_COLUMNS]:
        columns[name] = []
    value_names = ["answer", *extra, *TAIL_COLUMNS]
    for group, members in groups.items():
        for model in members:
            for conversation, rows in enumerate(by_model[model]):
                text = texts[conversation]
                for sample_ix, values in enumerate(rows):
                    columns["model"].append(model)
                    columns["group"].append(group)
                    columns["question"].append(text)
                    columns["paraphrase_ix"].append(conversation)
                    columns["sample_ix"].append(sample_ix)
                    for name in value_names:
                        columns[name].append(values[name])
    order = [*BASE_COLUMNS, *extra, *TAIL_COLUMNS]
    return pd.DataFrame({name: columns[name] for name in order})
