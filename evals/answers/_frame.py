"""The DataFrame of a question: one row per sample, stable columns, deterministic order
(groups as given, models as given, paraphrase, sample). A grid question's factors are columns
after `paraphrase_ix`; a question with a target checks each answer last (`mark_answers`:
`item`, `target`, `correct` after `sample_ix`). `completion_tokens` include
`reasoning_tokens` (NaN when the server did not say); `api_kwargs` is the JSON of what the
model was sent.

Values are computed once per model as a segment of columns and repeated for every group the
model is in; cost is computed per model as a rate and applied column-wise.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evals.cache import SampleResult
from evals.runner import BudgetCut

if TYPE_CHECKING:
    from evals.runner import Askable, Fetched, Planned, PriceFunction

REFUSED_ERROR = "the model refused"
"""The `error` of a text sample whose model refused (a refusal, not a failure)."""
CUT_BY_BUDGET = "empty answer: the token budget ran out before any visible output"
"""The `error` of a text sample that came back empty with `finish_reason` "length" (a
reasoning model spent its budget thinking): a paid, cached answer, not a failure; the run's
outcome says how far to raise max_tokens."""

Block = dict[str, Sequence[Any]]
"""Columns of one (model, conversation): `rows` values each."""
Segment = dict[str, Any]
"""Columns of one model over all its conversations: tokens as float arrays, finish reasons
(and free-form answers) as Arrow strings, the rest as lists."""


def _value_names(question: Askable) -> list[str]:
    return [
        "answer",
        *question.extra_columns,
        "finish_reason",
        "error",
        "prompt_tokens",
        "completion_tokens",
        "reasoning_tokens",
    ]


def sent_params(model: str, params: Mapping[str, Any]) -> str:
    """The `api_kwargs` of a request: its model and parameters as JSON (sorted keys)."""
    return json.dumps({"model": model, **params}, sort_keys=True, ensure_ascii=False)


def _reasoning_sum(found: Sequence[SampleResult]) -> float:
    counts = [s.reasoning_tokens for s in found]
    if not counts or any(c is None for c in counts):
        return math.nan
    return float(sum(c for c in counts if c is not None))


def _general_row(
    question: Askable, samples: list[SampleResult | None], errors: list[str | None]
) -> dict[str, Any]:
    """One row from `cached_samples_per_row` samples, any of which may be missing."""
    found = [s for s in samples if s is not None]
    row: dict[str, Any] = {
        "answer": None,
        "finish_reason": found[-1].finish_reason if found else None,
        "error": None,
        "prompt_tokens": sum(s.prompt_tokens for s in found) if found else math.nan,
        "completion_tokens": sum(s.completion_tokens for s in found) if found else math.nan,
        "reasoning_tokens": _reasoning_sum(found),
    }
    row.update(dict.fromkeys(question.extra_columns))
    if len(found) < len(samples):
        row["error"] = next((e for e in errors if e), None) or "no answer (not run)"
        return row
    try:
        row.update(question.read_answer(found))
    except (ValueError, TypeError, KeyError) as failure:
        row["answer"] = question.no_answer
        row["error"] = f"unreadable cached sample: {failure}"
    return row  # a text answer's refusal is marked on the whole column (`_marked_refusals`)


def _block(question: Askable, p: Planned, fetched: Fetched) -> Block:
    rows = question.samples_per_paraphrase
    per_row = question.cached_samples_per_row
    key = p.request.cache_key if p.request else ""
    cached = fetched.results.get(key) if p.request else None
    if question.answer_kind == "text" and cached is not None and rows and cached.has_first(rows):
        return {  # samples 0…rows-1 cached: the cache's own columns, sliced
            "answer": cached.content[:rows],
            "finish_reason": cached.finish_reason[:rows],
            "error": [None] * rows,
            "prompt_tokens": cached.prompt_tokens[:rows],
            "completion_tokens": cached.completion_tokens[:rows],
            "reasoning_tokens": cached.reasoning_tokens[:rows],
        }
    errors = fetched.outcome.errors
    model_error = fetched.outcome.failed_models.get(p.model)
    laid_out = []
    for row_ix in range(rows):
        ixs = range(row_ix * per_row, (row_ix + 1) * per_row)
        samples: list[SampleResult | None] = (
            [cached.get(ix) for ix in ixs] if cached is not None else [None] * per_row
        )
        row_errors = [p.route_error or errors.get((key, ix)) or model_error for ix in ixs]
        laid_out.append(_general_row(question, samples, row_errors))
    return {name: [row[name] for row in laid_out] for name in _value_names(question)}


def rates(model: str, price: PriceFunction) -> tuple[float, float]:
    """Dollars per prompt token and per completion token (NaN when unpriced)."""
    per_prompt = price(model, 1_000_000, 0)
    per_completion = price(model, 0, 1_000_000)
    if per_prompt is None or per_completion is None:
        return math.nan, math.nan
    return per_prompt / 1_000_000, per_completion / 1_000_000


def _repeated(values: list[Any], codes: np.ndarray) -> Any:
    """`[values[c] for c in codes]` as a column, with the dtype pandas would infer for that
    list, made without per-row Python objects."""
    if all(isinstance(v, str) for v in values):
        return pd.Series(values).array.take(codes)
    return [values[c] for c in codes.tolist()]


def _text_values(array: pa.Array) -> Any:
    """A column of str/None with the dtype pandas would infer for that list (`str` in
    pandas 3, object before), taken from Arrow without Python strings."""
    if array.null_count == len(array):
        return [None] * len(array)
    inferred = _inferred_text_dtype()
    if isinstance(inferred, pd.StringDtype):
        return pd.array(array, dtype=inferred)
    return array.to_numpy(zero_copy_only=False)


@cache
def _inferred_text_dtype() -> Any:
    return pd.Series(["text", None]).dtype


def _segment(question: Askable, planned: Sequence[Planned], fetched: Fetched) -> Segment:
    """One model's columns for all its conversations, block by block (a token count the
    server did not report is NaN)."""
    blocks = [_block(question, p, fetched) for p in planned]
    segment: Segment = {
        name: list(chain.from_iterable(block[name] for block in blocks))
        for name in _value_names(question)
    }
    for name in ("prompt_tokens", "completion_tokens", "reasoning_tokens"):
        segment[name] = np.array(segment[name], dtype=np.float64)
    for name in (
        ("finish_reason", "answer") if question.answer_kind == "text" else ("finish_reason",)
    ):
        segment[name] = pa.array(segment[name], type=pa.string())
    return segment


def _objects(segments: list[Segment], name: str) -> list[Any]:
    """An object column from the segments."""
    return list(chain.from_iterable(segment[name] for segment in segments))


def _marked_refusals(errors: list[Any], finish: pa.Array, answers: pa.Array) -> list[Any]:
    """Free-form rows whose answer was a refusal, or came back empty because the token
    budget ran out, and that have no other error, say so."""
    data = finish.buffers()[2]
    if data is None:
        return errors
    raw = data.to_pybytes()
    if b"refusal" in raw:  # rare: memchr speed when absent
        for row, reason in enumerate(finish.to_pylist()):
            if reason == "refusal" and errors[row] is None:
                errors[row] = REFUSED_ERROR
    if b"length" in raw:
        empty = pc.or_kleene(pc.is_null(answers), pc.equal(pc.utf8_length(answers), 0))
        cut = pc.fill_null(pc.and_kleene(pc.equal(finish, "length"), empty), False)
        for row in pc.indices_nonzero(cut).to_pylist():
            if errors[row] is None:
                errors[row] = CUT_BY_BUDGET
    return errors


def build_frame(
    question: Askable,
    groups: Mapping[str, Sequence[str]],
    planned: Sequence[Planned],
    fetched: Fetched,
    price: PriceFunction,
) -> pd.DataFrame:
    texts = question.question_texts()
    n_conversations = len(texts)
    rows = question.samples_per_paraphrase
    models = list(dict.fromkeys(p.model for p in planned))
    # `planned` holds one request per (model, conversation), model by model.
    segments = {
        model: _segment(question, planned[i * n_conversations : (i + 1) * n_conversations], fetched)
        for i, model in enumerate(models)
    }
    model_code = {model: code for code, model in enumerate(models)}
    model_rates = [rates(model, price) for model in models]
    # One segment per (group, model) in frame order.
    ordered: list[Segment] = []
    group_codes: list[int] = []
    model_codes: list[int] = []
    for group_code, members in enumerate(groups.values()):
        for model in members:
            ordered.append(segments[model])
            group_codes.append(group_code)
            model_codes.append(model_code[model])
    per_model = rows * n_conversations
    group_ix = np.repeat(np.asarray(group_codes, dtype=np.intp), per_model)
    model_ix = np.repeat(np.asarray(model_codes, dtype=np.intp), per_model)
    paraphrase_ix = np.tile(np.repeat(np.arange(n_conversations), rows), len(model_codes))
    total = len(paraphrase_ix)
    prompt = np.concatenate([s["prompt_tokens"] for s in ordered] or [np.empty(0)])
    completion = np.concatenate([s["completion_tokens"] for s in ordered] or [np.empty(0)])
    reasoning = np.concatenate([s["reasoning_tokens"] for s in ordered] or [np.empty(0)])
    finish = pa.concat_arrays([s["finish_reason"] for s in ordered] or [pa.array([], pa.string())])
    rate_in, rate_out = np.asarray(model_rates, dtype=float).reshape(-1, 2).T
    text = question.answer_kind == "text"
    text_answers = (
        pa.concat_arrays([s["answer"] for s in ordered])
        if text and ordered
        else pa.array([], pa.string())
    )
    sent = [_sent(planned[i * n_conversations]) for i in range(len(models))]
    data: dict[str, Any] = {
        "model": _repeated(models, model_ix),
        "group": _repeated(list(groups), group_ix),
        "answer": (_text_values(text_answers) if text and ordered else _objects(ordered, "answer")),
        "question": _repeated(texts, paraphrase_ix),
        "paraphrase_ix": paraphrase_ix.astype(np.int64),
        **{
            factor: _repeated(levels, paraphrase_ix)
            for factor, levels in question.prompt_factors().items()
        },
        "sample_ix": np.tile(np.arange(rows, dtype=np.int64), total // rows if rows else 0),
    }
    for name in question.extra_columns:
        data[name] = _objects(ordered, name)
    errors = _objects(ordered, "error")
    data["finish_reason"] = _text_values(finish)
    data["error"] = _marked_refusals(errors, finish, text_answers) if text else errors
    data["prompt_tokens"] = prompt
    data["completion_tokens"] = completion
    data["reasoning_tokens"] = reasoning
    data["cost"] = prompt * rate_in[model_ix] + completion * rate_out[model_ix]
    data["api_kwargs"] = _repeated(sent, model_ix) if total else []
    return question.mark_answers(pd.DataFrame(data))


def _sent(first: Planned) -> str | None:
    """A model's `api_kwargs` (the same for all its conversations), or None if unasked."""
    if first.request is None:
        return None
    return sent_params(first.model, first.request.params)


def budget_cuts(frame: pd.DataFrame) -> dict[str, BudgetCut]:
    """Each model with answers cut by its token budget, and a budget to try instead."""
    if "error" not in frame.columns or not (frame["error"] == CUT_BY_BUDGET).any():
        return {}
    cuts: dict[str, BudgetCut] = {}
    cut_rows = frame["error"] == CUT_BY_BUDGET
    for model, rows in frame.groupby("model", sort=False):
        mine = cut_rows.loc[rows.index]
        if not mine.any():
            continue
        sent = json.loads(str(rows.loc[mine, "api_kwargs"].iloc[0] or "{}"))
        limits = ("max_completion_tokens", "max_tokens")
        parameter = next((name for name in limits if name in sent), "max_completion_tokens")
        limit = sent.get(parameter)
        complete = rows.loc[rows["finish_reason"] == "stop", "completion_tokens"]
        most = float(complete.max()) if len(complete) else 0.0
        most_needed = max(1024.0, 4.0 * float(limit or 0), 2.0 * most)
        suggested = math.ceil(most_needed / 256) * 256  # in steps of 256 tokens
        cuts[str(model)] = BudgetCut(int(mine.sum()), len(rows), parameter, limit, suggested)
    return cuts
