"""The sandbox as a raw ASGI application: routing, authentication, faults, limits, headers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import labmgr.sandbox.batches as batches
import labmgr.sandbox.chat as chat
import labmgr.sandbox.files as files
import labmgr.sandbox.finetuning as finetuning
import labmgr.sandbox.responses as responses
from labmgr.sandbox.accounts import Account, AccountBook
from labmgr.sandbox.config import SandboxConfig
from labmgr.sandbox.core import Sandbox
from labmgr.sandbox.errors import APIError, bad_request, quota_exhausted, rate_limited, server_error
from labmgr.sandbox.faults import MODEL_ENDPOINTS
from labmgr.sandbox.limits import Admission, LimitsError, LimitTable, RateLimiter, demand_of
from labmgr.sandbox.protocol import Request, Response, RouteTable, StreamResponse, error_response
from labmgr.sandbox.store import request_id
from labmgr.sandbox.tinker import TinkerService

Handler = Callable[[Sandbox, Request], Awaitable[Response | StreamResponse]]
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


_FT = "/v1/fine_tuning/jobs"
ROUTES: list[tuple[str, str, str, Handler]] = [
    ("POST", "/v1/chat/completions", "chat.completions", chat.create),
    ("POST", "/v1/completions", "completions", chat.create_legacy),
    ("POST", "/v1/files", "files.create", files.create),
    ("GET", "/v1/files", "files.list", files.list_files),
    ("GET", "/v1/files/{id}", "files.retrieve", files.retrieve),
    ("DELETE", "/v1/files/{id}", "files.delete", files.delete),
    ("GET", "/v1/files/{id}/content", "files.content", files.content),
    ("POST", _FT, "fine_tuning.jobs.create", finetuning.create),
    ("GET", _FT, "fine_tuning.jobs.list", finetuning.list_jobs),
    ("GET", _FT + "/{id}", "fine_tuning.jobs.retrieve", finetuning.retrieve),
    ("POST", _FT + "/{id}/cancel", "fine_tuning.jobs.cancel", finetuning.cancel),
    ("POST", _FT + "/{id}/pause", "fine_tuning.jobs.pause", finetuning.pause),
    ("POST", _FT + "/{id}/resume", "fine_tuning.jobs.resume", finetuning.resume),
    ("GET", _FT + "/{id}/events", "fine_tuning.jobs.events", finetuning.events),
    ("GET", _FT + "/{id}/checkpoints", "fine_tuning.jobs.checkpoints", finetuning.checkpoints),
    ("GET", "/v1/models", "models.list", chat.list_models),
    ("GET", "/v1/models/{model}", "models.retrieve", chat.retrieve_model),  # `{model}` may hold ':'
    ("DELETE", "/v1/models/{model}", "models.delete", chat.delete_model),
    ("POST", "/v1/batches", "batches.create", batches.create),
    ("GET", "/v1/batches", "batches.list", batches.list_batches),
    ("GET", "/v1/batches/{id}", "batches.retrieve", batches.retrieve),
    ("POST", "/v1/batches/{id}/cancel", "batches.cancel", batches.cancel),
    ("POST", "/v1/responses", "responses.create", responses.create),
    ("POST", "/v1/responses/input_tokens", "responses.input_tokens", responses.count_input_tokens),
    ("GET", "/v1/responses/{id}", "responses.retrieve", responses.retrieve),
    ("DELETE", "/v1/responses/{id}", "responses.delete", responses.delete),
    ("POST", "/v1/responses/{id}/cancel", "responses.cancel", responses.cancel),
    ("GET", "/v1/responses/{id}/input_items", "responses.input_items", responses.list_input_items),
]
"""(method, path pattern, stats name, handler); `{model}` may hold '/'."""
_TABLE = RouteTable(ROUTES, "{model}")


class SandboxApp:
    """An ASGI application serving `/v1/...` and the `/sandbox/...` admin endpoints."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.tinker = TinkerService(sandbox)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # served with lifespan off: nothing else arrives
            return
        if scope["path"].startswith("/v1/"):
            await self._api(scope, receive, send)
        elif scope["path"].startswith("/tinker/"):
            await self._tinker(scope, receive, send)
        else:
            await self._admin(scope, receive, send)

    async def _api(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        sb = self.sandbox
        method = scope["method"]
        raw_path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        route = _TABLE.match(method, raw_path)
        name = route[0] if route else "unknown"
        sb.stats.enter(name)
        status: int | str = "no_response"
        account: Account | None = None
        admission: Admission | None = None
        fault: str | None = None
        body = b""
        try:
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            if name != "files.create":
                body = await _read_body(receive)
            try:
                if route is None:
                    with contextlib.suppress(APIError):
                        account = sb.accounts.authenticate(headers.get("authorization"))
                    raise APIError(404, f"Invalid URL ({method} {scope['path']})")
                account = sb.accounts.authenticate(headers.get("authorization"))
                if not sb.accounts.open:  # with one default account, any header is fine
                    _check_org_headers(account, headers)
                delay = sb.faults.delay_s()
                if delay:
                    await asyncio.sleep(delay)
                if not sb.faults.spend_quota(name):
                    sb.stats.faults["insufficient_quota"] += 1
                    raise quota_exhausted()
                query = dict(parse_qsl(scope["query_string"].decode("latin-1"), True))
                request = Request(method, route[2], query, body, headers, account, scope, receive)
                if sb.limiter.active and name in MODEL_ENDPOINTS:
                    admission = _admit(sb, name, request)
                    if admission is not None and admission.refusal is not None:
                        sb.stats.rate_limited[admission.demand.model] += 1
                        raise admission.refusal
                fault = sb.faults.draw(name, headers.get("x-stainless-retry-count"))
                if fault is not None:
                    sb.stats.faults[fault] += 1
                    if fault == "429":
                        raise rate_limited(sb.faults.retry_after_ms)
                    if fault == "500":
                        raise server_error()
                    if fault == "timeout" and await _hold(receive, headers, sb.faults):
                        status = "timeout"
                        return  # the client gave up, as intended
                response = await route[1](sb, request)
                if admission is not None and not admission.demand.budgeted:
                    admission.debit_tokens(_completion_tokens(response))
            except Exception as exc:
                response = error_response(exc, f"{method} {scope['path']}")
            status = "dropped" if fault == "drop" else response.status
            extra = _headers(account, admission, started)
            await _send(send, response, extra, drop=fault == "drop")
        finally:
            sb.stats.leave(status)

    async def _tinker(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Tinker's API (see `labmgr.sandbox.tinker`); no faults or limits apply to it."""
        raw_path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        query = dict(parse_qsl(scope["query_string"].decode("latin-1"), True))
        body = await _read_body(receive)
        path = raw_path.partition("?")[0].removeprefix("/tinker")
        response = await self.tinker.handle(scope["method"], path, query, headers, body)
        await _send(send, response, [], drop=False)

    async def _admin(self, scope: Scope, receive: Receive, send: Send) -> None:
        sb = self.sandbox
        key = (scope["method"], scope["path"].rstrip("/"))
        body = await _read_body(receive)
        try:
            if key == ("GET", "/sandbox/stats"):
                response = Response(sb.stats.snapshot())
            elif key == ("GET", "/sandbox/faults"):
                response = Response(sb.faults.model_dump())
            elif key == ("POST", "/sandbox/faults"):
                sb.faults = sb.faults.updated(_json_body(body, "faults"))
                response = Response(sb.faults.model_dump())
            elif key == ("GET", "/sandbox/limits"):
                response = Response(sb.limiter.table.to_json())
            elif key == ("POST", "/sandbox/limits"):  # replace the limits; `{}` removes them
                try:
                    limits = _json_body(body, "limits")
                    table = LimitTable.from_json(limits, source="POST /sandbox/limits")
                except LimitsError as exc:
                    raise bad_request(str(exc)) from None
                sb.limiter = RateLimiter(table)  # every bucket starts full
                response = Response(table.to_json())
            elif key == ("POST", "/sandbox/reset"):
                sb.reset()
                response = Response({"reset": True, "faults": sb.faults.model_dump()})
            elif key == ("GET", "/sandbox/health"):
                response = Response({"ok": True})
            else:
                raise APIError(404, f"Invalid URL ({scope['method']} {scope['path']})")
        except Exception as exc:
            response = error_response(exc, f"{scope['method']} {scope['path']}")
        await _send(send, response, [], drop=False)


def _headers(
    account: Account | None, admission: Admission | None, started: float
) -> list[tuple[bytes, bytes]]:
    """The headers every answer carries; `x-ratelimit-*` only for limits that are enforced."""
    out = [
        (b"x-request-id", request_id("req_").encode()),
        (b"openai-version", b"2020-10-01"),
        (b"openai-processing-ms", b"%d" % int((time.perf_counter() - started) * 1000)),
    ]
    if account is not None:
        out.append((b"openai-organization", account.slug.encode()))
        out.append((b"openai-project", account.project.encode()))
    if admission is not None:
        out += admission.headers()
    return out


def _admit(sb: Sandbox, name: str, request: Request) -> Admission | None:
    """The limiter's answer for a model request (None if no limit applies to it)."""
    with contextlib.suppress(APIError):  # the handler answers a malformed body
        demand = demand_of(name, request.json())
        return None if demand is None else sb.limiter.admit(request.account, demand)
    return None


def _check_org_headers(account: Account, headers: dict[str, str]) -> None:
    for name, allowed, field in (
        ("Organization", (account.organization, account.slug), "organization"),
        ("Project", (account.project,), "project"),
    ):
        sent = headers.get(f"openai-{field}")
        if sent and sent not in allowed:
            message = f"OpenAI-{name} header should match {field} for API key."
            raise APIError(401, message, code=f"mismatched_{field}")


def _completion_tokens(response: Response | StreamResponse) -> int:
    if isinstance(response, StreamResponse):
        usage = response.usage
    else:
        usage = response.payload.get("usage") if isinstance(response.payload, dict) else None
    if response.status != 200 or not isinstance(usage, dict):
        return 0
    return int(usage.get("completion_tokens", usage.get("output_tokens")) or 0)


def _json_body(body: bytes, what: str) -> Any:
    try:
        return json.loads(body) if body else {}
    except ValueError:
        raise bad_request(f"The {what} body must be a JSON object.") from None


async def _read_body(receive: Receive) -> bytes:
    message = await receive()
    parts = [message.get("body", b"")]
    while message.get("more_body"):
        message = await receive()
        parts.append(message.get("body", b""))
    return b"".join(parts)


async def _hold(receive: Receive, headers: dict[str, str], faults: Any) -> bool:
    """Hold an injected timeout past the client's read timeout; True if the client left."""
    try:
        read_timeout = float(headers.get("x-stainless-read-timeout", "10"))
    except ValueError:
        read_timeout = 10.0
    hold = min(read_timeout + 1.0, faults.timeout_hold_max_s)
    try:
        while True:
            message = await asyncio.wait_for(receive(), hold)
            if message["type"] == "http.disconnect":
                return True
    except TimeoutError:
        return False


async def _send(
    send: Send, response: Response | StreamResponse, extra: list[tuple[bytes, bytes]], *, drop: bool
) -> None:
    """Send `response`; a drop sends half the body (or frames) and no end: the connection
    closes without a valid HTTP response."""
    if isinstance(response, StreamResponse):
        parts = response.frames
        headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
        headers.append((b"cache-control", b"no-cache"))
    else:
        payload = response.payload
        parts = [payload if isinstance(payload, bytes) else json.dumps(payload).encode()]
        headers = [(b"content-type", response.content_type.encode())]
        headers.append((b"content-length", b"%d" % len(parts[0])))
    headers += extra + [(k.encode(), v.encode()) for k, v in response.headers.items()]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    if drop:
        parts = parts[: len(parts) // 2] if len(parts) > 1 else [parts[0][: len(parts[0]) // 2]]
    for part in parts:
        await send({"type": "http.response.body", "body": part, "more_body": True})
    if not drop:
        await send({"type": "http.response.body", "body": b""})


def create_app(
    config: SandboxConfig | None = None, *, accounts: AccountBook | None = None
) -> SandboxApp:
    """A fresh sandbox ASGI app; `accounts` replaces the config's accounts file."""
    config = config or SandboxConfig()
    if accounts is None:
        accounts = AccountBook.from_file(config.accounts) if config.accounts else AccountBook()
    return SandboxApp(Sandbox(config, accounts))
