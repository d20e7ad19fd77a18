"""The hot path of a run: a chat completion POSTed straight through the aiohttp session of the
endpoint's client, with the headers that client sends, answered with the SDK's own exception
classes when it fails, so that what comes after (classification, pacing) sees exactly what a
request through `AsyncOpenAI.post` would give it.

Half the client CPU of a request went to the SDK's request pipeline (request options, URL
merging, header building and validation, response wrapping), which a run's requests do not
need: they all go to one URL with the same headers and a body the runner has already
serialised. Everything else (model checks, files, batches) still goes through the SDK, as do
runs on the SDK's own transport (`RunSettings(http_transport="httpx")`, or a proxy). See
docs/design/runner.md (Transport).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx2
import openai

if TYPE_CHECKING:
    from evals.runner._transport import AiohttpTransport

__all__ = ["ChatPoster", "status_error"]

_STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    409: openai.ConflictError,
    422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
}
_DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def status_error(
    status: int, headers: Mapping[str, str], body: bytes, request: httpx2.Request
) -> openai.APIStatusError:
    """The exception the SDK raises for this answer: the class of its status, the message
    `Error code: <status> - <the server's message>`, and the body's `error` object."""
    response = httpx2.Response(
        status,
        headers=[(k, v) for k, v in headers.items() if k.lower() not in _DROPPED_HEADERS],
        content=body,
        request=request,
    )
    message = f"Error code: {status}"
    text = body.decode("utf-8", errors="replace").strip()
    parsed: object = text
    try:
        parsed = json.loads(text)
    except ValueError:
        pass
    else:
        error = parsed.get("error", parsed) if isinstance(parsed, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
    data = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
    kind = _STATUS_ERRORS.get(status)
    if kind is None:
        kind = openai.InternalServerError if status >= 500 else openai.APIStatusError
    return kind(message, response=response, body=data)


class ChatPoster:
    """Sends chat completion bodies for one client (its base URL, headers and timeout)."""

    def __init__(self, transport: AiohttpTransport, client: openai.AsyncOpenAI) -> None:
        import aiohttp

        self._transport = transport
        self.url = str(client.base_url).rstrip("/") + "/chat/completions"
        timeout = client.timeout
        read = timeout.read if isinstance(timeout, httpx2.Timeout) else timeout
        read = float(read) if isinstance(read, int | float) else None
        merged = {**client.default_headers, **client.auth_headers}
        headers = {name: value for name, value in merged.items() if isinstance(value, str)}
        headers["x-stainless-retry-count"] = "0"
        if read is not None:
            headers["x-stainless-read-timeout"] = str(read)
        self._headers = headers
        self._timeout = aiohttp.ClientTimeout(total=None, connect=read, sock_read=read)
        self._request = httpx2.Request("POST", self.url)
        """What a failure carries as its request (the URL only: no headers, so no key)."""

    async def post(self, content: bytes) -> tuple[dict[str, Any], Mapping[str, str]]:
        """The answer's JSON and headers; the SDK's exception for a failure."""
        import aiohttp

        session = self._transport.session()
        try:
            async with session.post(
                self.url,
                data=content,
                headers=self._headers,
                timeout=self._timeout,
                allow_redirects=False,
                skip_auto_headers=("User-Agent", "Accept-Encoding"),
            ) as response:
                body = await response.read()
                status = response.status
                headers = response.headers
        except TimeoutError:
            raise openai.APITimeoutError(request=self._request) from None
        except aiohttp.ClientError as error:
            raise openai.APIConnectionError(request=self._request) from error
        if not 200 <= status < 300:
            raise status_error(status, headers, body, self._request)
        data: dict[str, Any] = json.loads(body)
        return data, headers
