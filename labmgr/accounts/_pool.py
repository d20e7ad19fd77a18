"""`ClientPool`: one OpenAI client per endpoint + key, shared by every model on it."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import TYPE_CHECKING

from labmgr.accounts._credential import Credential
from labmgr.settings import Settings

if TYPE_CHECKING:  # the SDK is imported when a client is first made (it takes a second)
    from openai import AsyncOpenAI, OpenAI


class ClientPool:
    """Builds and keeps API clients, one per (base URL, key) pair, never one per model.

    Clients use the timeout and retry count of `settings.api` unless overridden here. The
    key is read from the environment when the client is first built. Async clients belong
    to the event loop that first uses them: use one pool per ``asyncio.run``, or `aclose`.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        self.timeout = settings.api.timeout if timeout is None else timeout
        """Seconds per request."""
        self.max_retries = settings.api.max_retries if max_retries is None else max_retries
        """Client-side retries per request."""
        self._sync: dict[str, OpenAI] = {}
        self._async: dict[str, AsyncOpenAI] = {}
        self._lock = threading.Lock()

    def client(self, credential: Credential) -> OpenAI:
        """The shared synchronous client for `credential` (raises `MissingApiKey`)."""
        key = credential.fingerprint()
        with self._lock:
            found = self._sync.get(key)
            if found is None:
                from openai import OpenAI

                found = OpenAI(
                    api_key=credential.api_key(),
                    base_url=credential.base_url,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
                self._sync[key] = found
            return found

    def async_client(self, credential: Credential) -> AsyncOpenAI:
        """The shared asynchronous client for `credential` (raises `MissingApiKey`)."""
        key = credential.fingerprint()
        with self._lock:
            found = self._async.get(key)
            if found is None:
                from openai import AsyncOpenAI

                found = AsyncOpenAI(
                    api_key=credential.api_key(),
                    base_url=credential.base_url,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
                self._async[key] = found
            return found

    def __len__(self) -> int:
        return len(self._sync) + len(self._async)

    def close(self) -> None:
        """Close the synchronous clients (async ones need `aclose`)."""
        with self._lock:
            clients, self._sync = list(self._sync.values()), {}
        for client in clients:
            client.close()

    async def aclose(self) -> None:
        """Close every client."""
        self.close()
        with self._lock:
            clients, self._async = list(self._async.values()), {}
        for client in clients:
            await client.close()

    def __enter__(self) -> ClientPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
