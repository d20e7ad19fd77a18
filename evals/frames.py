"""The DataFrame of a question: one row per sample, stable columns, deterministic order
(groups as given, models as given, paraphrase, sample).

Values are computed once per (model, conversation) as column blocks and repeated for every
group the model is in; cost is computed per model as a rate and applied column-wise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
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
_REFUSED = "the model refused"

Block = dict[str, list[Any]]


def _value_names(question: Question) -> list[str]:
    extra = ["raw_answer", "probs"] if isinstance(question, Rating) else []
    return ["answer", *extra, "finish_reason", "error", "prompt_tokens", "completion_tokens"]


def _fill_answer(question: Question, found: list[SampleResult], row: dict[str, Any]) -> None:
    if isinstance(question, Rating):
        raw = token_probabilities(found[0].top_logprobs())
        score = rating_score(
            raw,
            min_rating=question.min_rating,
            max_rating=question.max_rating,
            refusal_threshold=question.refusal_threshold,
        )
        row["answer"] = math.nan if score.score is None else score.score
        row["raw_answer"] = raw
        row["probs"] = score.probs
    elif isinstance(question, NextToken):
        row["answer"] = average_probabilities(
            (token_probabilities(s.top_logprobs()) for s in found),
            as_logprobs=not question.convert_to_probs,
        )
    else:
        row["answer"] = found[0].content
        if found[0].finish_reason == "refusal":
            row["error"] = _REFUSED


def _general_row(
    question: Question, samples: list[SampleResult | None], errors: list[str | None]
) -> dict[str, Any]:
    """One row from `cached_samples_per_row` samples, any of which may be missing."""
    found = [s for s in samples if s is not None]
    row: dict[str, Any] = {
        "answer": None,
        "finish_reason": found[-1].finish_reason if found else None,
        "error": None,
        "prompt_tokens": sum(s.prompt_tokens for s in found) if found else math.nan,
        "completion_tokens": sum(s.completion_tokens for s in found) if found else math.nan,
    }
    if isinstance(question, Rating):
        row["raw_answer"] = row["probs"] = None
    if len(found) < len(samples):
        row["error"] = next((e for e in errors if e), None) or _NOT_RUN
        return row
    try:
        _fill_answer(question, found, row)
    except (ValueError, TypeError, KeyError) as failure:
        row["answer"] = math.nan if isinstance(question, Rating) else None
        row["error"] = f"unreadable cached sample: {failure}"
    return row


def _fast_text_block(cached: dict[int, SampleResult], rows: int) -> Block | None:
    """Free-form answers with every sample cached: plain column lists, no per-row dicts."""
    try:
        samples = [cached[ix] for ix in range(rows)]
    except KeyError:
        return None
    finish = [s.finish_reason for s in samples]
    return {
        "answer": [s.content for s in samples],
        "finish_reason": finish,
        "error": [_REFUSED if f == "refusal" else None for f in finish],
        "prompt_tokens": [s.prompt_tokens for s in samples],
        "completion_tokens": [s.completion_tokens for s in samples],
    }


def _block(question: Question, p: Planned, fetched: Fetched) -> Block:
    rows = question.samples_per_paraphrase
    per_row = question.cached_samples_per_row
    key = p.request.cache_key if p.request else ""
    cached = fetched.results.get(key, {}) if p.request else {}
    if question.answer_kind == "text":
        fast = _fast_text_block(cached, rows)
        if fast is not None:
            return fast
    errors = fetched.outcome.errors
    model_error = fetched.outcome.failed_models.get(p.model)
    names = _value_names(question)
    block: Block = {name: [] for name in names}
    for row_ix in range(rows):
        ixs = range(row_ix * per_row, (row_ix + 1) * per_row)
        samples = [cached.get(ix) for ix in ixs]
        row_errors = [p.route_error or errors.get((key, ix)) or model_error for ix in ixs]
        row = _general_row(question, samples, row_errors)
        for name in names:
            block[name].append(row[name])
    return block


def _rates(model: str, price: PriceFunction) -> tuple[float, float]:
    """Dollars per prompt token and per completion token (NaN when unpriced)."""
    per_prompt = price(model, 1_000_000, 0)
    per_completion = price(model, 0, 1_000_000)
    if per_prompt is None or per_completion is None:
        return math.nan, math.nan
    return per_prompt / 1_000_000, per_completion / 1_000_000


def build_frame(
    question: Question,
    groups: Mapping[str, list[str]],
    planned: list[Planned],
    fetched: Fetched,
    price: PriceFunction,
) -> pd.DataFrame:
    texts = question.question_texts()
    n_conversations = len(texts)
    rows = question.samples_per_paraphrase
    blocks: dict[tuple[str, int], Block] = {}
    for index, p in enumerate(planned):
        blocks.setdefault((p.model, index % n_conversations), _block(question, p, fetched))
    names = _value_names(question)
    columns: dict[str, list[Any]] = {name: [] for name in ["model", "group", "question", *names]}
    paraphrase_ix: list[int] = []
    sample_ix = list(range(rows))
    prompt_rates: list[float] = []
    completion_rates: list[float] = []
    rates = {model: _rates(model, price) for model in {p.model for p in planned}}
    for group, members in groups.items():
        for model in members:
            rate_in, rate_out = rates[model]
            for conversation in range(n_conversations):
                block = blocks[(model, conversation)]
                columns["model"].extend([model] * rows)
                columns["group"].extend([group] * rows)
                columns["question"].extend([texts[conversation]] * rows)
                paraphrase_ix.extend([conversation] * rows)
                for name in names:
                    columns[name].extend(block[name])
                prompt_rates.extend([rate_in] * rows)
                completion_rates.extend([rate_out] * rows)
    total = len(columns["model"])
    prompt = np.asarray(columns["prompt_tokens"], dtype=float)
    completion = np.asarray(columns["completion_tokens"], dtype=float)
    data: dict[str, Any] = {
        "model": columns["model"],
        "group": columns["group"],
        "answer": columns["answer"],
        "question": columns["question"],
        "paraphrase_ix": paraphrase_ix,
        "sample_ix": sample_ix * (total // rows if rows else 0),
    }
    if isinstance(question, Rating):
        data["raw_answer"] = columns["raw_answer"]
        data["probs"] = columns["probs"]
    data["finish_reason"] = columns["finish_reason"]
    data["error"] = columns["error"]
    data["prompt_tokens"] = prompt
    data["completion_tokens"] = completion
    data["cost"] = prompt * np.asarray(prompt_rates) + completion * np.asarray(completion_rates)
    return pd.DataFrame(data)
