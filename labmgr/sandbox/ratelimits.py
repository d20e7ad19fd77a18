"""Informational `x-ratelimit-*` headers, counted per account over one-minute windows.

The sandbox never refuses a request because of these numbers (use faults for 429s); they
exist so that clients reading them see plausible, moving values.
"""

from __future__ import annotations

import time

__all__ = ["RateLimitHeaders"]

LIMIT_REQUESTS = 10_000
LIMIT_TOKENS = 10_000_000


def _duration(ms: float) -> bytes:
    if ms < 1000:
        return f"{int(ms)}ms".encode()
    return f"{ms / 1000:.3g}s".encode()


class RateLimitHeaders:
    """Per-account request and token counters for the current minute."""

    def __init__(self) -> None:
        self._windows: dict[str, list[float]] = {}

    def headers(self, scope: str, tokens: int) -> list[tuple[bytes, bytes]]:
        now = time.monotonic()
        window = self._windows.get(scope)
        if window is None or now - window[0] >= 60.0:
            window = self._windows[scope] = [now, 0, 0]
        window[1] += 1
        window[2] += tokens
        used_requests, used_tokens = window[1], window[2]
        return [
            (b"x-ratelimit-limit-requests", b"10000"),
            (b"x-ratelimit-limit-tokens", b"10000000"),
            (b"x-ratelimit-remaining-requests", b"%d" % max(0, LIMIT_REQUESTS - used_requests)),
            (b"x-ratelimit-remaining-tokens", b"%d" % max(0, LIMIT_TOKENS - used_tokens)),
            (b"x-ratelimit-reset-requests", _duration(used_requests * 60_000 / LIMIT_REQUESTS)),
            (b"x-ratelimit-reset-tokens", _duration(used_tokens * 60_000 / LIMIT_TOKENS)),
        ]
