"""The runner's OpenAI clients, one per endpoint and key, kept on the runner loop so later
fetches reuse their connections; one pushed out while in use closes after its last fetch."""

from __future__ import annotations

import asyncio
import os
import weakref

from openai import AsyncOpenAI

from evals.runner._blocking import close_at_exit
from evals.runner._settings import RunSettings
from evals.runner._transport import ChatPoster, make_http_client
from labmgr.accounts import ClientPool, key_digest
from labmgr.routing import Endpoint

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
    made = None
    if settings.http_transport == "aiohttp":
        made = make_http_client(
            max_connections=settings.max_concurrency, timeout=settings.request_timeout
        )
    client = AsyncOpenAI(
        http_client=made[0] if made is not None else None,
        api_key=endpoint.api_key(),
        base_url=endpoint.base_url,
        organization=endpoint.organization,
        project=endpoint.project,
        max_retries=0,
        timeout=settings.request_timeout,
    )
    if made is not None:
        _POSTERS[client] = ChatPoster(made[1], client)
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
