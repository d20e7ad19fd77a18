"""`/v1/batches`: create from an uploaded JSONL, retrieve, list, cancel; output and error files
(every line is answered at creation and revealed over `batch_seconds`)."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.chat import run_chat, run_legacy_completion
from labmgr.sandbox.errors import (
    APIError,
    bad_request,
    metadata_param,
    missing_parameter,
    server_error,
)
from labmgr.sandbox.files import create_file, file_param
from labmgr.sandbox.limits import demand_of, limit_family
from labmgr.sandbox.protocol import Request, Response
from labmgr.sandbox.responses import create_response
from labmgr.sandbox.store import new_id, request_id

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox


Runner = Callable[["Sandbox", Account, dict[str, Any]], dict[str, Any]]

ENDPOINTS: dict[str, tuple[Runner, str]] = {
    "/v1/chat/completions": (run_chat, "chat.completions"),
    "/v1/completions": (run_legacy_completion, "completions"),
    "/v1/responses": (create_response, "responses.create"),
}
"""Batch `endpoint` → what answers one line's body, and the stats name of its meter."""
WINDOW = 24 * 3600
ACTIVE = ("validating", "in_progress", "finalizing", "cancelling")
"""States whose tokens are enqueued."""
FINAL = ("completed", "expired", "cancelled")
"""States whose output and error files are written (the batch is *settled*)."""

_UNRUN = {
    "expired": ("batch_expired", "before the completion window expired."),
    "cancelled": ("batch_cancelled", "because the batch was cancelled."),
}


def _phases(batch: dict[str, Any]) -> dict[str, float]:
    """When the batch reaches each status (never, for a batch nobody cancels)."""
    start, seconds = batch["created_at"], batch["batch_seconds"]
    cancelling = batch.get("cancelling_at")
    return {
        "in_progress": start + 0.1 * seconds,
        "finalizing": start + 0.8 * seconds,
        "completed": start + seconds,
        "expired": start + batch["window_s"],
        "cancelling": math.inf if cancelling is None else cancelling,
        "cancelled": math.inf if cancelling is None else cancelling + 0.1 * seconds,
    }


def _status(batch: dict[str, Any], now: float) -> str:
    phases = _phases(batch)
    if now >= phases["cancelling"]:
        return "cancelled" if now >= phases["cancelled"] else "cancelling"
    if batch["errors"]:
        return "validating" if now < phases["in_progress"] else "failed"
    if phases["expired"] < phases["finalizing"] and now >= phases["expired"]:
        return "expired"
    if now < phases["in_progress"]:
        return "validating"
    if now < phases["finalizing"]:
        return "in_progress"
    return "finalizing" if now < phases["completed"] else "completed"


def _stop(batch: dict[str, Any], status: str, now: float) -> float:
    """How far the batch got: `now`, or when it expired or cancelling began."""
    phase = {"expired": "expired", "cancelling": "cancelling", "cancelled": "cancelling"}
    return _phases(batch)[phase[status]] if status in phase else now


def _done(batch: dict[str, Any], status: str, now: float) -> int:
    """How many requests (from the top of the file) are done in `status` at `now`."""
    if status in ("finalizing", "completed"):
        return int(batch["total"])
    if status in ("validating", "failed"):
        return 0
    phases = _phases(batch)
    span = phases["finalizing"] - phases["in_progress"]
    progress = (_stop(batch, status, now) - phases["in_progress"]) / span
    return math.floor(batch["total"] * min(1.0, max(0.0, progress)))


def _settled_status(sb: Sandbox, batch: dict[str, Any], now: float) -> str:
    """The batch's status at `now`, its files written first if it has just finished."""
    status = _status(batch, now)
    if status in FINAL and not batch.get("settled"):
        _settle(sb, batch, status)
    return status


def batch_view(sb: Sandbox, batch: dict[str, Any], now: float) -> dict[str, Any]:
    status = _settled_status(sb, batch, now)
    phases = _phases(batch)

    def stamp(name: str, at: float, reached: bool) -> None:
        view[name] = int(at) if reached else None

    view: dict[str, Any] = {
        "id": batch["id"],
        "object": "batch",
        "endpoint": batch["endpoint"],
        "input_file_id": batch["input_file_id"],
        "completion_window": batch["completion_window"],
        "status": status,
        "created_at": int(batch["created_at"]),
        "output_file_id": batch.get("output_file_id"),
        "error_file_id": batch.get("error_file_id"),
        "errors": {"object": "list", "data": batch["errors"]} if batch["errors"] else None,
        "expires_at": int(phases["expired"]),
        "metadata": batch["metadata"],
        "model": batch["model"],
    }
    stop = _stop(batch, status, now)
    ran = status != "failed"
    stamp("in_progress_at", phases["in_progress"], ran and stop >= phases["in_progress"])
    stamp("finalizing_at", phases["finalizing"], ran and stop >= phases["finalizing"])
    stamp("completed_at", phases["completed"], status == "completed")
    stamp("failed_at", phases["in_progress"], status == "failed")
    stamp("expired_at", phases["expired"], status == "expired")
    stamp("cancelling_at", phases["cancelling"], status in ("cancelling", "cancelled"))
    stamp("cancelled_at", phases["cancelled"], status == "cancelled")
    total, done = batch["total"], _done(batch, status, now)
    completed = batch["outcomes"][:done].count("1")
    # An expired or cancelled batch's requests that never ran count as failed too.
    failed = total - completed if status in _UNRUN else done - completed
    view["request_counts"] = {"total": total, "completed": completed, "failed": failed}
    view["usage"] = batch.get("usage") if batch.get("settled") else None
    # The spec types these without null: a key is left out until there is something to say.
    return {k: v for k, v in view.items() if v is not None or k == "metadata"}


def _settle(sb: Sandbox, batch: dict[str, Any], status: str) -> None:
    results = json.loads(sb.store.blob(f"batch-{batch['id']}") or b"[]")
    done = _done(batch, status, sb.now())
    outputs, errors = [], []
    usage: Counter[str] = Counter()
    for result, ok in zip(results[:done], batch["outcomes"], strict=False):
        if ok == "1":
            usage.update(_line_usage(result["response"]["body"].get("usage") or {}))
            outputs.append(result)
        else:
            errors.append(result)
    if status in _UNRUN:
        code, why = _UNRUN[status]
        error = {"code": code, "message": f"This request could not be executed {why}"}
        for result in results[done:]:
            errors.append({**result, "response": None, "error": error})
    for kind, records in (("output", outputs), ("error", errors)):
        if records:
            file = create_file(
                sb,
                scope=batch["scope"],
                filename=f"batch_{batch['id']}_{kind}.jsonl",
                purpose="batch_output",
                content="".join(json.dumps(r) + "\n" for r in records).encode(),
                created_at=_phases(batch)[status],
            )
            batch[f"{kind}_file_id"] = file["id"]
    batch["usage"] = {
        "input_tokens": usage["input_tokens"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage["output_tokens"],
        "output_tokens_details": {"reasoning_tokens": usage["reasoning_tokens"]},
        "total_tokens": usage["input_tokens"] + usage["output_tokens"],
    }
    batch["settled"] = True
    sb.store.save()


def _line_usage(usage: dict[str, Any]) -> dict[str, int]:
    """A line's input, output and reasoning tokens (chat and responses name them apart)."""
    details = usage.get("output_tokens_details") or usage.get("completion_tokens_details") or {}
    return {
        "input_tokens": int(usage.get("input_tokens", usage.get("prompt_tokens")) or 0),
        "output_tokens": int(usage.get("output_tokens", usage.get("completion_tokens")) or 0),
        "reasoning_tokens": int(details.get("reasoning_tokens") or 0),
    }


def settle_due(sb: Sandbox, now: float) -> None:
    """Write the files of every batch that finished by `now` but was not looked at since."""
    for batch in list(sb.store.batches.values()):
        if not batch.get("settled"):
            _settled_status(sb, batch, now)


_MISSING = "missing_required_parameter"
_LINE_ERRORS = {
    "json": ("invalid_json_line", "This line is not parseable as valid JSON.", None),
    "custom_id": (_MISSING, "Each line needs a `custom_id`.", "custom_id"),
    "duplicate": ("duplicate_custom_id", "The custom_id for this request is a duplicate.", None),
    "method": ("invalid_method", "Only the POST method is supported.", "method"),
    "url": (
        "invalid_url",
        "The URL provided for this request does not match the batch endpoint {endpoint}.",
        "url",
    ),
    "body": (_MISSING, "The request body needs a `model`.", "body"),
    "stream": ("invalid_request", "Streaming is not supported in batches.", "body.stream"),
    "model": (
        "mismatched_model",
        "The provided model does not match the model of the other requests in the file.",
        "body.model",
    ),
    "empty": ("empty_file", "The batch input file is empty.", None),
}
"""Problems of a batch input file: (code, message, param)."""


def _parse_input(
    content: bytes, endpoint: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The requests of a batch input file, and the batch-level errors it has."""
    lines: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    models: set[str] = set()

    def error(problem: str, number: int) -> None:
        code, message, param = _LINE_ERRORS[problem]
        message = message.format(endpoint=endpoint)
        errors.append({"code": code, "line": number, "message": message, "param": param})

    for number, raw in enumerate(content.decode("utf-8", "replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            error("json", number)
            continue
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            error("custom_id", number)
            continue
        if line["custom_id"] in seen:
            error("duplicate", number)
        seen.add(line["custom_id"])
        if line.get("method") != "POST":
            error("method", number)
        if line.get("url") != endpoint:
            error("url", number)
        body = line.get("body")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            error("body", number)
            continue
        if body.get("stream"):
            error("stream", number)
        models.add(body["model"])
        if len(models) > 1:
            error("model", number)
        lines.append({"custom_id": line["custom_id"], "body": body})
    if not lines and not errors:
        error("empty", 1)
    return lines, errors


def _batch_error(code: str, message: str) -> dict[str, Any]:
    return {"code": code, "line": None, "message": message, "param": None}


def _queue_error(
    sb: Sandbox, account: Account, family: str | None, tokens: int
) -> dict[str, Any] | None:
    """`token_limit_exceeded` if the batch would pass its organization's enqueued tokens."""
    cap = sb.limiter.table.queue_tokens(family) if family else None
    if cap is None:
        return None
    now = sb.now()
    enqueued = sum(
        other["tokens"]
        for other in sb.store.batches.values()
        if other["organization_id"] == account.organization
        and other["family"] == family
        and not other.get("settled")
        and _status(other, now) in ACTIVE
    )
    if enqueued + tokens <= cap:
        return None
    return _batch_error(
        "token_limit_exceeded",
        f"Enqueued token limit reached for {family} in organization {account.organization}. "
        f"Limit: {cap:,} enqueued tokens. Please try again once some "
        "in_progress batches have been completed.",
    )


def _answer(
    sb: Sandbox, account: Account, run: Runner, lines: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str]:
    """Every line's output record, and a ``1``/``0`` string of which succeeded."""
    error_rate = sb.faults.batch_line_error_rate
    results: list[dict[str, Any]] = []
    outcomes: list[str] = []
    for line in lines:
        try:
            if error_rate and random.random() < error_rate:
                sb.stats.faults["batch_line_error"] += 1
                raise server_error()
            status, body = 200, run(sb, account, line["body"])
        except APIError as exc:
            status, body = exc.status, exc.body()
        response = {"status_code": status, "request_id": request_id("req_"), "body": body}
        record = {"id": new_id("batch_req_"), "custom_id": line["custom_id"]}
        results.append({**record, "response": response, "error": None})
        outcomes.append("1" if status == 200 else "0")
    return results, "".join(outcomes)


async def create(sb: Sandbox, req: Request) -> Response:
    body = req.json()
    endpoint = body.get("endpoint")
    if endpoint not in ENDPOINTS:
        raise bad_request(
            f"Invalid 'endpoint': {endpoint!r}. The sandbox runs batches for "
            f"{', '.join(ENDPOINTS)}.",
            param="endpoint",
        )
    if body.get("completion_window") != "24h":
        raise bad_request(
            "Invalid 'completion_window': only '24h' is supported.", param="completion_window"
        )
    file_id = file_param(sb, req.account, body, "input_file_id", "batch")
    if file_id is None:
        raise missing_parameter("input_file_id")
    metadata = metadata_param(body)
    account = req.account
    lines, errors = _parse_input(sb.store.blob(file_id) or b"", endpoint)
    maximum = sb.config.batch_max_requests
    if not errors and len(lines) > maximum:
        message = (
            f"The input file has {len(lines):,} requests; a batch can have at most "
            f"{maximum:,}. Split the requests into several batches."
        )
        errors.append(_batch_error("request_limit_exceeded", message))
    model = lines[0]["body"]["model"] if lines else None
    family = limit_family(model) if model else None
    demands = [] if errors else [demand_of(ENDPOINTS[endpoint][1], line["body"]) for line in lines]
    tokens = sum(demand.tokens for demand in demands if demand is not None)  # prompts + budgets
    if not errors:
        queue_error = _queue_error(sb, account, family, tokens)
        if queue_error is not None:
            errors.append(queue_error)
    results, outcomes = ([], "") if errors else _answer(sb, account, ENDPOINTS[endpoint][0], lines)
    batch = {
        "id": new_id("batch_"),
        "scope": account.scope,
        "organization_id": account.organization,
        "endpoint": endpoint,
        "input_file_id": file_id,
        "completion_window": "24h",
        "created_at": sb.now(),
        "batch_seconds": sb.config.batch_seconds,
        "window_s": sb.faults.batch_window_s or WINDOW,
        "metadata": metadata,
        "model": model,
        "family": family,
        "total": 0 if errors else len(lines),
        "tokens": tokens,
        "outcomes": outcomes,
        "errors": errors or None,
    }
    sb.store.put_blob(f"batch-{batch['id']}", json.dumps(results).encode())
    sb.store.batches[batch["id"]] = batch
    sb.store.save()
    return Response(batch_view(sb, batch, sb.now()))


def _owned(req: Request, sb: Sandbox) -> dict[str, Any]:
    return req.owned(sb.store.batches, "No batch found with id '{id}'.", "batch_id")


async def retrieve(sb: Sandbox, req: Request) -> Response:
    return Response(batch_view(sb, _owned(req, sb), sb.now()))


async def list_batches(sb: Sandbox, req: Request) -> Response:
    now = sb.now()
    scope = req.account.scope
    batches = [b for b in reversed(sb.store.batches.values()) if b["scope"] == scope]
    page = req.page(batches, 20, 100)
    page["data"] = [batch_view(sb, b, now) for b in page["data"]]
    return Response(page)


async def cancel(sb: Sandbox, req: Request) -> Response:
    batch = _owned(req, sb)
    now = sb.now()
    status = _status(batch, now)
    if status not in ("validating", "in_progress", "finalizing"):
        raise bad_request(
            f"Batch {batch['id']} is {status} and cannot be cancelled.", param="batch_id"
        )
    batch["cancelling_at"] = now
    sb.store.save()
    return Response(batch_view(sb, batch, now))
