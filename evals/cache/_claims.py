"""Claims: before buying a sample, a process records in the cache that it is buying it, so
that other processes (on this machine or, with PostgreSQL, on others) wait for it instead of
buying it too.

A claim is a row (request key, sample index, owner, expires), taken atomically (an upsert
that succeeds only where no live claim of another owner exists) and renewed by a heartbeat
thread. A waiter looks for the sample before it looks at claims, so the buyer releases its
claims together when it finishes; a sample given up (an error) is released at once. A claim
whose owner died is not renewed, and the next process to look takes it over when it
expires. See docs/design/cache.md (Claims).
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Sequence
from contextlib import suppress
from types import TracebackType

from evals.cache._backend import CacheBackend, Item
from evals.errors import CacheError


class Claims:
    """One claimant (a run of one process) on a cache: what it holds, kept alive while it
    is entered as a context manager, and released on the way out."""

    def __init__(
        self,
        backend: CacheBackend,
        lease_seconds: float,
        *,
        heartbeat_seconds: float | None = None,
    ) -> None:
        self._backend = backend
        self.lease_seconds = lease_seconds
        self.heartbeat_seconds = heartbeat_seconds or max(0.05, lease_seconds / 3)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        """Who holds the claims: host, process and a random part (one per run)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(self, items: Sequence[Item]) -> set[Item]:
        """Claim what nobody else holds (or whose claim expired); returns what is ours now."""
        return self._backend.claim(self.owner, items, self.lease_seconds) if items else set()

    def held(self, items: Sequence[Item]) -> set[Item]:
        """Those of `items` somebody holds a live claim on (this claimant included)."""
        return self._backend.held(items) if items else set()

    def release(self, items: Sequence[Item] | None = None) -> None:
        """Give up these claims (all of them with None)."""
        self._backend.release(self.owner, items)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.heartbeat_seconds):
                with suppress(CacheError):  # the next beat tries again
                    self._backend.renew(self.owner, self.lease_seconds)
        finally:
            self._backend.close()

    def __enter__(self) -> Claims:
        self._thread = threading.Thread(target=self._beat, name="cache-claims", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        # Whatever is still held was not bought: let others have it now, not after the lease.
        with suppress(CacheError):
            self.release()
