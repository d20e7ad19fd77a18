"""`ClientPool`: the job manager's API clients, one per endpoint + key, never one per model.

The runner's asynchronous clients are kept on its own loop (`evals.runner`), with the same
rule: one client per endpoint and key, shared by every model routed there.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from labmgr.accounts._credential import Credential
from labmgr.settings import Settings

if TYPE_CHECKING:  # the SDK is imported when a client is first made (it takes a second)
    from openai import OpenAI


class ClientPool:
    """Synchronous clients with the timeout and retry count of `settings.api`, made on first
    use (reading the key from the environment then) and shared across threads."""

    def __init__(self, settings: Settings) -> None:
        self.timeout = settings.api.timeout
        self.max_retries = settings.api.max_retries
        self._clients: dict[str, OpenAI] = {}
        self._lock = threading.Lock()

    def client(self, credential: Credential) -> OpenAI:
        """The shared client for `credential` (raises `MissingApiKey`)."""
        key = credential.fingerprint()
        with self._lock:
            found = self._clients.get(key)
            if found is None:
                from openai import OpenAI

                found = self._clients[key] = OpenAI(
                    api_key=credential.api_key(),
                    base_url=credential.base_url,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
            return found

    def __len__(self) -> int:
        return len(self._clients)

    def close(self) -> None:
        """Close every client."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    def __enter__(self) -> ClientPool:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
