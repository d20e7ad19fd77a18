"""`ClientPool`: the project's OpenAI clients, one per endpoint + key (and the options a client
is made with), never one per model. The job manager asks by `Credential` (with the timeout and
retries of `settings.api`); the runner keeps its own kind on its loop (`get` with a maker)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

from labmgr.accounts._credentials import Credential
from labmgr.settings import ApiDefaults, Settings

if TYPE_CHECKING:  # the SDK is imported when a client is first made (it takes a second)
    from openai import AsyncOpenAI, OpenAI

Client = TypeVar("Client")


def key_digest(key: str) -> str:
    """What a pool keeps of a key: a digest, to tell keys apart without holding one."""
    return hashlib.sha256(key.encode()).hexdigest()


class ClientPool:
    """Clients by what identifies them, made on first use and shared across threads. With
    `keep`, the least recently used clients beyond it go to `push_out` (whose owner closes
    them). Async clients belong to the loop that first uses them: close them there."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        keep: int | None = None,
        push_out: Callable[[Any], None] | None = None,
    ) -> None:
        api = settings.api if settings is not None else ApiDefaults()
        self.timeout = api.timeout
        self.max_retries = api.max_retries
        self.keep = keep
        self._push_out = push_out
        self._clients: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        pushed = []
        with self._lock:
            found = self._clients.get(key)
            if found is None:
                found = self._clients[key] = make()
                while self.keep is not None and len(self._clients) > self.keep:
                    pushed.append(self._clients.popitem(last=False)[1])
            else:
                self._clients.move_to_end(key)
        for client in pushed:
            if self._push_out is not None:
                self._push_out(client)
        return found

    def client(self, credential: Credential) -> OpenAI:
        """The shared client for `credential` (raises `MissingApiKey`)."""
        from openai import OpenAI

        return self._for(credential, OpenAI)

    def async_client(self, credential: Credential) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return self._for(credential, AsyncOpenAI)

    def _for(self, credential: Credential, kind: Callable[..., Client]) -> Client:
        key = credential.api_key()
        return self.get(
            (kind, credential.base_url, key_digest(key)),
            lambda: kind(
                api_key=key,
                base_url=credential.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            ),
        )

    def __len__(self) -> int:
        return len(self._clients)

    def drain(self, *, sync_only: bool = False) -> list[Any]:
        """Take every client (or every synchronous one) out of the pool, unclosed."""
        with self._lock:
            taken = [
                key
                for key, client in self._clients.items()
                if not (sync_only and inspect.iscoroutinefunction(client.close))
            ]
            return [self._clients.pop(key) for key in taken]

    def close(self) -> None:
        """Close the synchronous clients (async ones stay, for `aclose` on their loop)."""
        for client in self.drain(sync_only=True):
            client.close()

    async def aclose(self) -> None:
        closing = [client.close() for client in self.drain()]
        awaited = [closed for closed in closing if inspect.isawaitable(closed)]
        await asyncio.gather(*awaited, return_exceptions=True)
