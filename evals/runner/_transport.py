"""The runner's HTTP on aiohttp (when installed and no proxy is set): `AiohttpTransport` under
the SDK's httpx2 client, and `ChatPoster`, the hot path, posting chat completions through the
same session with that client's headers and failing with the SDK's exceptions."""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import Mapping
from typing import Any

import httpx2
import openai

__all__ = ["AiohttpTransport", "ChatPoster", "make_http_client"]

_KEEPALIVE_SECONDS = 4.0
"""Idle connections are dropped a little before servers commonly drop them (5 s)."""
_DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
_SKIPPED = ("User-Agent", "Accept-Encoding")


def _kept_headers(raw: Any) -> list[tuple[str, str]]:
    pairs = ((k.decode("latin-1"), v.decode("latin-1")) for k, v in raw)
    return [(k, v) for k, v in pairs if k.lower() not in _DROPPED_HEADERS]


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """Sends httpx2 requests with one aiohttp session."""

    def __init__(self, *, max_connections: int) -> None:
        self.max_connections = max_connections
        self._session: Any = None

    def session(self) -> Any:
        import aiohttp

        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self.max_connections,
                ttl_dns_cache=300,
                enable_cleanup_closed=True,
                keepalive_timeout=_KEEPALIVE_SECONDS,
            )
            self._session = aiohttp.ClientSession(
                connector=connector, auto_decompress=True, trust_env=False
            )
        return self._session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        import aiohttp

        timeouts = request.extensions.get("timeout") or {}
        timeout = aiohttp.ClientTimeout(
            total=None, connect=timeouts.get("connect"), sock_read=timeouts.get("read")
        )
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        try:
            async with self.session().request(
                request.method,
                str(request.url),
                headers=headers,
                data=request.content,
                timeout=timeout,
                allow_redirects=False,
                skip_auto_headers=_SKIPPED,
            ) as response:
                body = await response.read()
                kept = _kept_headers(response.raw_headers)
                status = response.status
        except TimeoutError as error:
            raise httpx2.ReadTimeout(str(error) or "timed out", request=request) from error
        except aiohttp.ClientError as error:
            message = str(error) or type(error).__name__
            raise httpx2.ConnectError(message, request=request) from error
        return httpx2.Response(status, headers=kept, content=body, request=request)

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
            await asyncio.sleep(0)


def make_http_client(
    *, max_connections: int, timeout: float
) -> tuple[httpx2.AsyncClient, AiohttpTransport] | None:
    """An httpx2 client on the aiohttp transport, and the transport; None without aiohttp or
    with a proxy configured (the SDK's transport honours it)."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return None
    proxies = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
    if any(os.environ.get(name) for name in proxies):
        return None
    transport = AiohttpTransport(max_connections=max_connections)
    client = httpx2.AsyncClient(
        transport=transport,
        timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
        follow_redirects=False,
    )
    return client, transport


class ChatPoster:
    """Sends chat completion bodies for one client (its base URL, headers and timeout)."""

    def __init__(self, transport: AiohttpTransport, client: openai.AsyncOpenAI) -> None:
        import aiohttp

        self._transport = transport
        self._client = weakref.proxy(client)  # the client keeps its poster, not the reverse
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
        """What a failure carries (the URL only: no key)."""

    async def post(self, content: bytes) -> tuple[dict[str, Any], Mapping[str, str]]:
        """The answer's JSON and headers; the SDK's exception for a failure."""
        import aiohttp

        try:
            async with self._transport.session().post(
                self.url,
                data=content,
                headers=self._headers,
                timeout=self._timeout,
                allow_redirects=False,
                skip_auto_headers=_SKIPPED,
            ) as response:
                body = await response.read()
                status = response.status
                headers = response.headers
                raw_headers = response.raw_headers
        except TimeoutError:
            raise openai.APITimeoutError(request=self._request) from None
        except aiohttp.ClientError as error:
            raise openai.APIConnectionError(request=self._request) from error
        if not 200 <= status < 300:
            failed = httpx2.Response(
                status, headers=_kept_headers(raw_headers), content=body, request=self._request
            )
            raise self._client._make_status_error_from_response(failed)
        data: dict[str, Any] = json.loads(body)
        return data, headers
