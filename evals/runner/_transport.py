"""An httpx2 transport backed by aiohttp, for the OpenAI SDK's client.

The SDK stays the interface (request building, auth headers, error mapping), but the HTTP/1.1
connection handling and parsing move from pure-Python httpcore2/h11 to aiohttp's C parser,
which roughly halves the client CPU per request. Used when aiohttp is installed.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx2

__all__ = ["AiohttpTransport", "make_http_client"]

_KEEPALIVE_SECONDS = 4.0
_DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """Sends httpx2 requests with one aiohttp session (created lazily in the running loop)."""

    def __init__(self, *, max_connections: int) -> None:
        self.max_connections = max_connections
        self._session: Any = None

    def session(self) -> Any:
        """The aiohttp session (made on first use, in the running loop)."""
        import aiohttp

        if self._session is None:
            # Idle connections are dropped a little before servers commonly drop them (5 s):
            # a connection the server closed is then rarely picked for the next request.
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
            total=None,
            connect=timeouts.get("connect"),
            sock_read=timeouts.get("read"),
        )
        session = self.session()
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        try:
            async with session.request(
                request.method,
                str(request.url),
                headers=headers,
                data=request.content,
                timeout=timeout,
                allow_redirects=False,
                skip_auto_headers=("User-Agent", "Accept-Encoding"),
            ) as response:
                body = await response.read()
                response_headers = [
                    (k.decode("latin-1"), v.decode("latin-1"))
                    for k, v in response.raw_headers
                    if k.decode("latin-1").lower() not in _DROPPED_HEADERS
                ]
                status = response.status
        except TimeoutError as error:
            raise httpx2.ReadTimeout(str(error) or "timed out", request=request) from error
        except aiohttp.ClientError as error:
            raise httpx2.ConnectError(
                str(error) or type(error).__name__, request=request
            ) from error
        return httpx2.Response(status, headers=response_headers, content=body, request=request)

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
            await asyncio.sleep(0)


def _proxy_configured() -> bool:
    return any(
        os.environ.get(name)
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
    )


def make_http_client(
    *, max_connections: int, timeout: float
) -> tuple[httpx2.AsyncClient, AiohttpTransport] | None:
    """An httpx2 client on the aiohttp transport, and that transport; or None (the SDK's own
    transport) when aiohttp is unavailable or a proxy is configured (the SDK's transport
    honours proxies)."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return None
    if _proxy_configured():
        return None
    transport = AiohttpTransport(max_connections=max_connections)
    client = httpx2.AsyncClient(
        transport=transport,
        timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
        follow_redirects=False,
    )
    return client, transport
