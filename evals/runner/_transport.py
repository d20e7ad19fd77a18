"""The runner's HTTP: its OpenAI clients, one per endpoint and key, kept on the runner loop so
later fetches reuse their connections; on aiohttp (when installed and no proxy is set)
`AiohttpTransport` under them, and `ChatPoster`, the hot path, posting chat completions
through the same session with the client's headers and failing with the SDK's exceptions."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import weakref
from collections.abc import Mapping
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI

from evals.runner._blocking import close_at_exit
from evals.runner._settings import RunSettings
from labmgr.accounts import ClientPool, key_digest
from labmgr.routing import Endpoint

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


_IN_USE: dict[int, int] = {}
"""Fetches sending through each kept client (by `id`)."""
_RETIRED: dict[int, AsyncOpenAI] = {}
"""Kept clients pushed out while in use."""
_CLOSING: set[asyncio.Task[None]] = set()
_POSTERS: weakref.WeakKeyDictionary[AsyncOpenAI, ChatPoster] = weakref.WeakKeyDictionary()
_INHERITED: list[AsyncOpenAI] = []
"""In a forked child, the parent's clients: never used, never dropped (that would report the
parent's connections as unclosed)."""
_registered = False


def _push_out(client: AsyncOpenAI) -> None:
    if _IN_USE.get(id(client)):
        _RETIRED[id(client)] = client
    else:
        task = asyncio.get_running_loop().create_task(client.close())
        _CLOSING.add(task)
        task.add_done_callback(_CLOSING.discard)


KEPT = ClientPool(keep=8, push_out=_push_out)


def _forget_kept() -> None:
    global _registered
    _INHERITED.extend([*KEPT.drain(), *_RETIRED.values()])
    _IN_USE.clear()
    _RETIRED.clear()
    _CLOSING.clear()
    _registered = False


os.register_at_fork(after_in_child=_forget_kept)


def _make(endpoint: Endpoint, settings: RunSettings) -> AsyncOpenAI:
    """A client on the aiohttp transport, with its chat poster; on the SDK's own transport
    when httpx is asked for, aiohttp is not installed or a proxy is configured (the SDK's
    transport honours it)."""
    transport = http_client = None
    timeout = settings.request_timeout
    proxies = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
    if (
        settings.http_transport == "aiohttp"
        and importlib.util.find_spec("aiohttp") is not None
        and not any(os.environ.get(name) for name in proxies)
    ):
        transport = AiohttpTransport(max_connections=settings.max_concurrency)
        http_client = httpx2.AsyncClient(
            transport=transport,
            timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
            follow_redirects=False,
        )
    client = AsyncOpenAI(
        http_client=http_client,
        api_key=endpoint.api_key(),
        base_url=endpoint.base_url,
        organization=endpoint.organization,
        project=endpoint.project,
        max_retries=0,
        timeout=timeout,
    )
    if transport is not None:
        _POSTERS[client] = ChatPoster(transport, client)
    return client


async def _close_kept() -> None:
    closing = [KEPT.aclose(), *(client.close() for client in _RETIRED.values())]
    _RETIRED.clear()
    _IN_USE.clear()
    await asyncio.gather(*closing, return_exceptions=True)


class ClientLease:
    """The kept clients one fetch sends through (made on the runner loop)."""

    def __init__(self, settings: RunSettings) -> None:
        global _registered
        if not _registered:
            close_at_exit(_close_kept)
            _registered = True
        self.settings = settings
        self._mine: dict[str, AsyncOpenAI] = {}

    def client(self, endpoint: Endpoint) -> AsyncOpenAI:
        found = self._mine.get(endpoint.id)
        if found is None:
            key = (
                endpoint.id,
                key_digest(endpoint.api_key()),  # a key that changed gets a new client
                self.settings.http_transport,
                self.settings.max_concurrency,
                self.settings.request_timeout,
            )
            found = self._mine[endpoint.id] = KEPT.get(key, lambda: _make(endpoint, self.settings))
            _IN_USE[id(found)] = _IN_USE.get(id(found), 0) + 1
        return found

    def poster(self, endpoint: Endpoint) -> ChatPoster | None:
        """This endpoint's chat poster, or None on the SDK's own transport."""
        return _POSTERS.get(self.client(endpoint))

    async def release(self) -> None:
        """Let the clients go (closing those pushed out that no other fetch uses)."""
        closing = []
        for client in self._mine.values():
            left = _IN_USE.pop(id(client), 1) - 1
            if left > 0:
                _IN_USE[id(client)] = left
            elif id(client) in _RETIRED:
                closing.append(_RETIRED.pop(id(client)).close())
        self._mine.clear()
        await asyncio.gather(*closing, return_exceptions=True)
