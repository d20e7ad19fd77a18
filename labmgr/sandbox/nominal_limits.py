"""Nominal `x-ratelimit-*` headers for responses no enforced limit covers.

Counted per account over one-minute windows against 10,000 requests and 10,000,000 tokens;
nothing is refused because of them (enforced limits are `limiter`'s). They exist so that
clients reading the headers see plausible, moving values when no limits are set.
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
