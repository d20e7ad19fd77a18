"""Reading what an endpoint says of its rate limits: an answer's `x-ratelimit-*` headers and a
429's wording (`Rate limit reached for … on requests per min (RPM): Limit 3000, Used 2999…`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, NamedTuple

Dimension = Literal["requests", "tokens"]
DIMENSIONS: tuple[Dimension, ...] = ("requests", "tokens")

_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_REFUSAL = re.compile(
    r"Rate limit reached for (?P<family>\S+) in (?:organization|project) \S+ on "
    r"(?P<kind>requests|tokens) per (?P<per>min|day) \(\w+\): Limit (?P<limit>[\d,]+), "
    r"Used (?P<used>[\d,]+), Requested (?P<requested>[\d,]+)\."
    r"(?: Please try again in (?P<wait>[\dhmsuµn.]+))?"
)
_SNAPSHOT_DATE = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def go_seconds(text: str) -> float | None:
    """A Go-style duration (`20ms`, `1m12.5s`) in seconds; None when it is not one."""
    text = text.strip()
    if not text:
        return None
    total, at = 0.0, 0
    for match in _GO_PART.finditer(text):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _GO_UNITS[match.group(2)]
        at = match.end()
    return total if at == len(text) else None


class LimitReading(NamedTuple):
    """One dimension of an answer's limit headers, per minute (a tuple: the hot path)."""

    limit: float
    remaining: float


def _number(value: bytes | str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if 0 <= number < 1e18 else None


def read_headers(headers: object) -> dict[Dimension, LimitReading]:
    """The `x-ratelimit-limit-*` / `-remaining-*` pairs of an answer's headers, per dimension."""
    get = getattr(headers, "get", None)
    if get is None:
        return {}
    readings: dict[Dimension, LimitReading] = {}
    for dimension in DIMENSIONS:
        limit = _number(get(f"x-ratelimit-limit-{dimension}"))
        remaining = _number(get(f"x-ratelimit-remaining-{dimension}"))
        if limit and remaining is not None:
            readings[dimension] = LimitReading(limit, min(remaining, limit))
    return readings


@dataclass(frozen=True, slots=True)
class Refusal:
    """A 429 `rate_limit_exceeded`, read from its message."""

    family: str
    dimension: Dimension
    per_minute: bool
    """False for a per-day limit: only waiting helps."""
    limit: float
    used: float
    requested: float
    wait: float | None
    """Seconds until the request would be admitted (`Please try again in …`)."""


def read_refusal(message: str) -> Refusal | None:
    """The numbers of a rate-limit refusal's message, or None when worded otherwise."""
    match = _REFUSAL.search(message)
    if match is None:
        return None
    wait = match.group("wait")
    return Refusal(
        family=match.group("family"),
        dimension="requests" if match.group("kind") == "requests" else "tokens",
        per_minute=match.group("per") == "min",
        limit=float(match.group("limit").replace(",", "")),
        used=float(match.group("used").replace(",", "")),
        requested=float(match.group("requested").replace(",", "")),
        wait=go_seconds(wait.rstrip(".")) if wait else None,
    )


def guess_family(model: str) -> str:
    """The family whose limits a model likely shares: a fine-tune's base, without a snapshot
    date (`gpt-4.1-mini-2025-04-14` and its fine-tunes count as `gpt-4.1-mini`)."""
    if model.startswith("ft:"):
        parts = model.split(":")
        if len(parts) >= 2 and parts[1]:
            model = parts[1]
    return _SNAPSHOT_DATE.sub("", model)


TOKEN_MARGIN = 1.1
"""Token estimates are raised by this factor."""


def completion_budget(params: dict[str, object]) -> int | None:
    """The completion tokens a request may use per choice, when it says."""
    budget = params.get("max_completion_tokens") or params.get("max_tokens")
    return budget if isinstance(budget, int) and budget > 0 else None


def prompt_guess(messages: list[dict[str, object]]) -> float:
    """A request's prompt tokens guessed: four characters a token, plus a few per message."""
    chars = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(
                len(str(part.get("text") or "")) for part in content if isinstance(part, dict)
            )
    return chars / 4 + 4 * len(messages) + 3
