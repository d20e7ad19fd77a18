"""`/v1/batches`: create from an uploaded JSONL, retrieve, list, cancel; output and error files.

Like jobs, a batch's status is derived from its creation time and `job_seconds`:
validating 10 %, in progress until 80 %, finalizing until 100 %. Its requests are answered
when a read first finds it completed (or cancelled, with the share it had reached).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.chat import run_chat, run_legacy_completion
from labmgr.sandbox.errors import APIError, bad_request, no_such_batch
from labmgr.sandbox.files import create_file
from labmgr.sandbox.protocol import Request, Response, cursor_page, parse_limit
from labmgr.sandbox.responses import create_response
from labmgr.sandbox.store import new_id, request_id

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox

__all__ = ["handlers", "settle_due"]

ENDPOINTS = {
    "/v1/chat/completions": run_chat,
    "/v1/completions": run_legacy_completion,
    "/v1/responses": create_response,
}
WINDOW = 24 * 3600


def _phases(batch: dict[str, Any]) -> dict[str, float]:
    start, seconds = batch["created_at"], batch["job_seconds"]
    return {
        "in_progress": start + 0.1 * seconds,
        "finalizing": start + 0.8 * seconds,
        "completed": start + seconds,
    }


def _status(batch: dict[str, Any], now: float) -> str:
    cancel_at = batch.get("cancelling_at")
    if cancel_at is not None and now >= cancel_at:
        return "cancelled" if now >= cancel_at + 0.1 * batch["job_seconds"] else "cancelling"
    phases = _phases(batch)
    if now < phases["in_progress"]:
        return "validating"
    if batch["errors"]:
        return "failed"
    if now < phases["finalizing"]:
        return "in_progress"
    return "finalizing" if now < phases["completed"] else "completed"


def _progress(batch: dict[str, Any], at: float) -> float:
    phases = _phases(batch)
    span = phases["finalizing"] - phases["in_progress"]
    return min(1.0, max(0.0, (at - phases["in_progress"]) / span))


def batch_view(sb: Sandbox, batch: dict[str, Any], now: float) -> dict[str, Any]:
    status = _status(batch, now)
    if status in ("completed", "cancelled") and not batch.get("settled"):
        _settle(sb, batch, status)
    phases = _phases(batch)
    created = batch["created_at"]
    cancel_at = batch.get("cancelling_at")

    def stamp(name: str, at: float | None, reached: bool) -> None:
        view[name] = int(at) if at is not None and reached else None

    view: dict[str, Any] = {
        "id": batch["id"],
        "object": "batch",
        "endpoint": batch["endpoint"],
        "input_file_id": batch["input_file_id"],
        "completion_window": batch["completion_window"],
        "status": status,
        "created_at": int(created),
        "output_file_id": batch.get("output_file_id"),
        "error_file_id": batch.get("error_file_id"),
        "errors": {"object": "list", "data": batch["errors"]} if batch["errors"] else None,
        "expires_at": int(created + WINDOW),
        "metadata": batch["metadata"],
        "model": batch["model"],
    }
    ran = status not in ("validating", "failed") and not (
        cancel_at is not None and cancel_at < phases["in_progress"]
    )
    stamp("in_progress_at", phases["in_progress"], ran and now >= phases["in_progress"])
    stamp("finalizing_at", phases["finalizing"], status in ("finalizing", "completed"))
    stamp("completed_at", phases["completed"], status == "completed")
    stamp("failed_at", phases["in_progress"], status == "failed")
    stamp("cancelling_at", cancel_at, status in ("cancelling", "cancelled"))
    stamp(
        "cancelled_at",
        cancel_at + 0.1 * batch["job_seconds"] if cancel_at is not None else None,
        status == "cancelled",
    )
    view["expired_at"] = None
    if batch.get("settled"):
        view["request_counts"] = batch["request_counts"]
        view["usage"] = batch["usage"]
    else:
        total = batch["total"]
        done = math.floor(total * _progress(batch, now)) if status == "in_progress" else 0
        if status in ("finalizing",):
            done = total
        view["request_counts"] = {"total": total, "completed": done, "failed": 0}
        view["usage"] = None
    return view


def _settle(sb: Sandbox, batch: dict[str, Any], status: str) -> None:
    lines = json.loads(sb.store.blob(f"batch-{batch['id']}") or b"[]")
    if status == "cancelled":
        lines = lines[: math.floor(len(lines) * _progress(batch, batch["cancelling_at"]))]
    account = Account(batch["organization_id"], batch["slug"], batch["project"])
    run = ENDPOINTS[batch["endpoint"]]
    outputs, errors = [], []
    usage = {"input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0}
    for line in lines:
        req_id = request_id("req_")
        record: dict[str, Any] = {"id": new_id("batch_req_"), "custom_id": line["custom_id"]}
        try:
            body = run(sb, account, line["body"])
        except APIError as exc:
            record["response"] = {
                "status_code": exc.status,
                "request_id": req_id,
                "body": exc.body(),
            }
            record["error"] = None
            errors.append(record)
            continue
        for key, tokens in _line_usage(body["usage"]).items():
            usage[key] += tokens
        record["response"] = {"status_code": 200, "request_id": req_id, "body": body}
        record["error"] = None
        outputs.append(record)
    finished = _phases(batch)["completed"]
    for kind, records in (("output", outputs), ("error", errors)):
        if records:
            file = create_file(
                sb,
                scope=batch["scope"],
                filename=f"batch_{batch['id']}_{kind}.jsonl",
                purpose="batch_output",
                content="".join(json.dumps(r) + "\n" for r in records).encode(),
                created_at=finished,
            )
            batch[f"{kind}_file_id"] = file["id"]
    batch["request_counts"] = {
        "total": batch["total"],
        "completed": len(outputs),
        "failed": len(errors),
    }
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
    if "input_tokens" in usage:  # a response
        details = usage.get("output_tokens_details") or {}
        return {
            "input_tokens": int(usage["input_tokens"]),
            "output_tokens": int(usage["output_tokens"]),
            "reasoning_tokens": int(details.get("reasoning_tokens") or 0),
        }
    details = usage.get("completion_tokens_details") or {}
    return {
        "input_tokens": int(usage["prompt_tokens"]),
        "output_tokens": int(usage["completion_tokens"]),
        "reasoning_tokens": int(details.get("reasoning_tokens") or 0),
    }


def settle_due(sb: Sandbox, now: float) -> None:
    """Answer every batch that finished by `now` but was not looked at since."""
    for batch in list(sb.store.batches.values()):
        if not batch.get("settled"):
            status = _status(batch, now)
            if status in ("completed", "cancelled"):
                _settle(sb, batch, status)


def _parse_input(
    content: bytes, endpoint: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The requests of a batch input file, and the batch-level errors it has."""
    lines: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    models: set[str] = set()

    def error(code: str, number: int, message: str, param: str | None = None) -> None:
        errors.append({"code": code, "line": number, "message": message, "param": param})

    for number, raw in enumerate(content.decode("utf-8", "replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            error("invalid_json_line", number, "This line is not parseable as valid JSON.")
            continue
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            error(
                "missing_required_parameter", number, "Each line needs a `custom_id`.", "custom_id"
            )
            continue
        if line["custom_id"] in seen:
            error("duplicate_custom_id", number, "The custom_id for this request is a duplicate.")
        seen.add(line["custom_id"])
        if line.get("method") != "POST":
            error("invalid_method", number, "Only the POST method is supported.", "method")
        if line.get("url") != endpoint:
            error(
                "invalid_url",
                number,
                f"The URL provided for this request does not match the batch endpoint {endpoint}.",
                "url",
            )
        body = line.get("body")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            error("missing_required_parameter", number, "The request body needs a `model`.", "body")
            continue
        if body.get("stream"):
            error(
                "invalid_request", number, "Streaming is not supported in batches.", "body.stream"
            )
        models.add(body["model"])
        if len(models) > 1:
            error(
                "mismatched_model",
                number,
                "The provided model does not match the model of the other requests in the file.",
                "body.model",
            )
        lines.append({"custom_id": line["custom_id"], "body": body})
    if not lines and not errors:
        error("empty_file", 1, "The batch input file is empty.")
    return lines, errors


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
    file_id = body.get("input_file_id")
    if not isinstance(file_id, str):
        raise bad_request("Missing required parameter: 'input_file_id'.", param="input_file_id")
    record = sb.store.visible(sb.store.files, file_id, req.account.scope)
    if record is None:
        raise bad_request(f"No such File object: {file_id}", param="input_file_id")
    if record["purpose"] != "batch":
        raise bad_request(
            f"File {file_id} has purpose '{record['purpose']}'; batches need purpose 'batch'.",
            param="input_file_id",
        )
    metadata = body.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, dict)
        and len(metadata) <= 16
        and all(isinstance(v, str) for v in metadata.values())
    ):
        raise bad_request("Invalid 'metadata': at most 16 string pairs.", param="metadata")
    lines, errors = _parse_input(sb.store.blob(file_id) or b"", endpoint)
    account = req.account
    batch = {
        "id": new_id("batch_"),
        "scope": account.scope,
        "organization_id": account.organization,
        "slug": account.slug,
        "project": account.project,
        "endpoint": endpoint,
        "input_file_id": file_id,
        "completion_window": "24h",
        "created_at": sb.now(),
        "job_seconds": sb.job_seconds,
        "metadata": metadata,
        "model": lines[0]["body"]["model"] if lines else None,
        "total": 0 if errors else len(lines),
        "errors": errors or None,
    }
    sb.store.put_blob(f"batch-{batch['id']}", json.dumps([] if errors else lines).encode())
    sb.store.batches[batch["id"]] = batch
    sb.store.save()
    return Response(batch_view(sb, batch, sb.now()))


def _visible_batch(sb: Sandbox, req: Request) -> dict[str, Any]:
    batch = sb.store.visible(sb.store.batches, req.params[0], req.account.scope)
    if batch is None:
        raise no_such_batch(req.params[0])
    return batch


async def retrieve(sb: Sandbox, req: Request) -> Response:
    return Response(batch_view(sb, _visible_batch(sb, req), sb.now()))


async def list_batches(sb: Sandbox, req: Request) -> Response:
    now = sb.now()
    limit = parse_limit(req.query, 20, 100)
    scope = req.account.scope
    batches = [b for b in reversed(sb.store.batches.values()) if b["scope"] == scope]
    page = cursor_page(batches, after=req.query.get("after"), limit=limit, first_last=True)
    page["data"] = [batch_view(sb, b, now) for b in page["data"]]
    return Response(page)


async def cancel(sb: Sandbox, req: Request) -> Response:
    batch = _visible_batch(sb, req)
    now = sb.now()
    status = _status(batch, now)
    if status not in ("validating", "in_progress", "finalizing"):
        raise bad_request(
            f"Batch {batch['id']} is {status} and cannot be cancelled.", param="batch_id"
        )
    batch["cancelling_at"] = now
    sb.store.save()
    return Response(batch_view(sb, batch, now))


def handlers() -> list[tuple[str, str, str, Any]]:
    """(method, path pattern, stats name, handler) for the router."""
    return [
        ("POST", "/v1/batches", "batches.create", create),
        ("GET", "/v1/batches", "batches.list", list_batches),
        ("GET", "/v1/batches/{id}", "batches.retrieve", retrieve),
        ("POST", "/v1/batches/{id}/cancel", "batches.cancel", cancel),
    ]
