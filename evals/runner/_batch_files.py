"""The files of a batch: input lines built from requests (one request, several samples via
`n`, split to the API's limits), and the lines of a finished batch's output and error files
(by `custom_id`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from evals.cache import BatchLine, BatchRecord, ChatRequest
from evals.runner._rate_limits import TOKEN_MARGIN, completion_budget, prompt_guess

CHAT_URL: Final = "/v1/chat/completions"
_QUEUE_LIMIT = re.compile(r"Limit:? ([\d,]+) enqueued tokens")


@dataclass(frozen=True)
class PlannedLine:
    """A line to put in a batch, with its JSON, estimated enqueued tokens, and the most tokens
    it can be billed for (the prompt guessed with a margin, every choice's whole budget)."""

    line: BatchLine
    request: ChatRequest
    body: bytes
    tokens: int
    prompt_tokens: float
    completion_tokens: int


def input_line(custom_id: str, request: ChatRequest, n: int) -> bytes:
    """One JSONL line asking `request` for `n` choices."""
    line = {"custom_id": custom_id, "method": "POST", "url": CHAT_URL, "body": request.body(n)}
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def planned_line(
    custom_id: str, request: ChatRequest, sample_ixs: Sequence[int], logprobs: bool
) -> PlannedLine:
    n = len(sample_ixs)
    completion = (completion_budget(request.params) or 0) * n
    prompt = prompt_guess(request.messages) * TOKEN_MARGIN
    return PlannedLine(
        BatchLine(custom_id, request.cache_key, tuple(sample_ixs), logprobs),
        request,
        input_line(custom_id, request, n),
        int(prompt + completion * TOKEN_MARGIN) + 1,
        prompt,
        completion,
    )


def chunks(
    lines: Sequence[PlannedLine], *, max_requests: int, max_bytes: int, max_tokens: float | None
) -> Iterator[list[PlannedLine]]:
    """The lines in chunks of at most `max_requests` lines, `max_bytes` bytes and `max_tokens`
    enqueued tokens (a line alone over a limit is a chunk of its own)."""
    chunk: list[PlannedLine] = []
    size = tokens = 0
    for line in lines:
        over = (
            len(chunk) >= max_requests
            or size + len(line.body) > max_bytes
            or (max_tokens is not None and tokens + line.tokens > max_tokens)
        )
        if chunk and over:
            yield chunk
            chunk, size, tokens = [], 0, 0
        chunk.append(line)
        size += len(line.body)
        tokens += line.tokens
    if chunk:
        yield chunk


@dataclass(frozen=True)
class LineResult:
    """What a batch did with one line: a chat completion body, or an error."""

    body: dict[str, Any] | None
    status: int | None
    """The line's HTTP status (None for a line that never ran)."""
    code: str | None
    message: str

    @property
    def retryable(self) -> bool:
        """Whether a later batch may succeed: server errors, rate limits, lines never run."""
        return self.status is None or self.status >= 500 or self.status in (408, 409, 429)


def read_results(content: bytes) -> dict[str, LineResult]:
    """The lines of a batch's output or error file, by `custom_id` (unreadable ones skipped)."""
    results: dict[str, LineResult] = {}
    for raw in content.splitlines():
        try:
            line = json.loads(raw)
            custom_id = str(line["custom_id"])
        except (ValueError, KeyError, TypeError):
            continue
        response = line.get("response")
        status = response.get("status_code") if isinstance(response, dict) else None
        if isinstance(status, float) and status.is_integer():
            status = int(status)  # a JSON writer may spell 200 as 200.0
        if isinstance(status, int) and not isinstance(status, bool):
            body = response.get("body")
            if status == 200 and isinstance(body, dict):
                results[custom_id] = LineResult(body, 200, None, "")
                continue
            inner = body.get("error") if isinstance(body, dict) else None
            inner = inner if isinstance(inner, dict) else {}
            code = inner.get("code") or inner.get("type")
            message = str(inner.get("message") or "").strip()[:300]
            results[custom_id] = LineResult(
                None, status, str(code) if code else None, f"{status}: {message}"
            )
            continue
        error = line.get("error")
        error = error if isinstance(error, dict) else {}
        code = error.get("code")
        message = str(error.get("message") or "the line did not run").strip()[:300]
        results[custom_id] = LineResult(
            None, None, str(code) if code else None, f"{code}: {message}" if code else message
        )
    return results


def queue_limit_of(message: str) -> int | None:
    """The enqueued-token limit a `token_limit_exceeded` message names."""
    match = _QUEUE_LIMIT.search(message)
    return int(match.group(1).replace(",", "")) if match else None


def where_held(record: BatchRecord | None) -> str:
    """Which batch holds a sample, for a person: its id and status, once it has one."""
    if record is not None and record.batch_id:
        return f"batch {record.batch_id} ({record.status})"
    return "a batch being submitted"
