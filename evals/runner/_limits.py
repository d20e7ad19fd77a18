"""Per-endpoint adaptive concurrency: cut on a 429 (pausing for its Retry-After), grow while
healthy."""

from __future__ import annotations

import asyncio
import time
from collections import deque

DECREASE = 0.7
"""What a 429 multiplies the limit by."""


class AdaptiveLimit:
    """An async concurrency limit: a 429 multiplies it by `DECREASE` (once per `cooldown`,
    never below 1); after `limit` successes in a row it grows by one, up to `maximum`."""

    def __init__(self, initial: int, *, maximum: int, cooldown: float = 2.0) -> None:
        self.maximum = max(1, maximum)
        self.limit = max(1, min(initial, self.maximum))
        self.cooldown = cooldown
        self.in_flight = 0
        self.cuts = 0
        self._successes = 0
        self._last_cut = -float("inf")
        self._paused_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        free = self.in_flight < self.limit and time.monotonic() >= self._paused_until
        if free and not self._waiters:
            self.in_flight += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._wake()
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1  # the slot was handed over, give it back
                self._wake()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        self.in_flight -= 1
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        """Hand free slots to waiters in order (after any pause)."""
        while self._waiters and self.in_flight < self.limit:
            pause = self._paused_until - time.monotonic()
            if pause > 0:
                asyncio.get_running_loop().call_later(pause, self._wake)
                return
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            self.in_flight += 1
            waiter.set_result(None)

    def succeeded(self) -> None:
        self._successes += 1
        if self._successes >= self.limit and self.limit < self.maximum:
            self.limit += 1
            self._successes = 0

    def rate_limited(self, retry_after: float | None) -> None:
        now = time.monotonic()
        self._successes = 0
        if retry_after:
            self._paused_until = max(self._paused_until, now + min(retry_after, 60.0))
        if now - self._last_cut >= self.cooldown:
            self._last_cut = now
            self.limit = max(1, int(self.limit * DECREASE))
            self.cuts += 1
