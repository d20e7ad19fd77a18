"""Reading a finished batch into the cache: each line of its output file becomes the cached
samples a synchronous answer would have given, and each line of its error file says whether
a later batch may succeed (a server error, a line that never ran) or not (a bad request)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.cache import BatchItem, BatchLine, BatchRecord, Cache
from evals.runner._batch_files import LineResult, read_results
from evals.runner._choices import read_choices
from evals.runner._outcome import RunOutcome

BatchPrice = Callable[[str, float, float], float]
"""`(model, prompt_tokens, completion_tokens) -> dollars` at the batch price."""


@dataclass
class Collected:
    """What a finished batch gave, sample by sample."""

    stored: list[BatchItem] = field(default_factory=list)
    failed: dict[BatchItem, str] = field(default_factory=dict)
    """Samples that cannot succeed (recorded in the cache's error table)."""
    retry: dict[BatchItem, str] = field(default_factory=dict)
    """Samples a later batch may get (server errors, lines that never ran)."""
    cancelled: dict[BatchItem, str] = field(default_factory=dict)
    """Samples whose lines a cancel stopped."""


def collect_batch(
    cache: Cache,
    record: BatchRecord,
    batch: Any,
    lines: Sequence[BatchLine],
    content_of: Callable[[str], bytes],
    price: BatchPrice,
    outcome: RunOutcome,
) -> Collected:
    """Store the answers of a finished (`completed`, `expired` or `cancelled`) batch (what
    they cost counted in `outcome`); its output and error files are read with
    `content_of(file_id)`."""
    results: dict[str, LineResult] = {}
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            results.update(read_results(content_of(file_id)))
    got = Collected()
    for line in lines:
        result = results.get(line.custom_id) or LineResult(
            None, None, None, f"not in the output of batch {batch.id}"
        )
        items = [(line.request_key, ix) for ix in line.sample_ixs]
        if result.body is not None:
            _store(cache, record, line, result.body, price, got, outcome)
        elif result.code == "batch_cancelled":
            for item in items:
                got.cancelled[item] = (
                    f"batch {batch.id} was cancelled before this line ran; run again to send it"
                )
        elif result.retryable:
            for item in items:
                got.retry[item] = f"batch {batch.id}: {result.message}"
        else:
            cache.record_errors(
                line.request_key,
                record.model,
                record.label,
                line.sample_ixs,
                kind="error",
                message=result.message,
            )
            for item in items:
                got.failed[item] = result.message
    return got


def _store(
    cache: Cache,
    record: BatchRecord,
    line: BatchLine,
    body: dict[str, Any],
    price: BatchPrice,
    got: Collected,
    outcome: RunOutcome,
) -> None:
    key = line.request_key
    try:
        read = read_choices(body, line.sample_ixs, line.logprobs)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        message = f"malformed response: {type(error).__name__}: {error}"
        read_errors = dict.fromkeys(line.sample_ixs, message)
    else:
        outcome.requests += 1
        outcome.prompt_tokens += read.prompt_tokens
        outcome.completion_tokens += read.completion_tokens
        outcome.reasoning_tokens += read.reasoning_tokens
        outcome.cost += price(record.model, read.prompt_tokens, read.completion_tokens)
        if read.stored:
            cache.store_samples(key, record.model, record.label, read.stored)
            outcome.samples += len(read.stored)
            got.stored += [(key, ix) for ix, _ in read.stored]
        read_errors = read.errors
    for ix, message in read_errors.items():
        cache.record_errors(key, record.model, record.label, [ix], kind="error", message=message)
        got.failed[(key, ix)] = message
