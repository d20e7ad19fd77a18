"""Dollar cost of tokens. Uses `labmgr.pricing` (the lab's price table, overridable in its
config); the small built-in table here is the fallback when labmgr core is absent."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["BUILTIN_PRICES", "count_tokens", "default_price", "price_per_million"]

BUILTIN_PRICES: dict[str, tuple[float, float]] = {
    # model: (input, output) dollars per million tokens
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "ft:gpt-4o": (3.75, 15.00),
    "ft:gpt-4o-mini": (0.30, 1.20),
    "ft:gpt-4.1": (3.00, 12.00),
    "ft:gpt-4.1-mini": (0.80, 3.20),
    "ft:gpt-4.1-nano": (0.20, 0.80),
}
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def _base_name(model: str) -> str:
    """`ft:gpt-4o-mini-2024-07-18:org:suffix:id` → `ft:gpt-4o-mini`; snapshots → alias."""
    if model.startswith("ft:"):
        base = model[3:].split(":", 1)[0]
        return "ft:" + _SNAPSHOT.sub("", base)
    return _SNAPSHOT.sub("", model)


def price_per_million(model: str) -> tuple[float, float] | None:
    """(input, output) dollars per million tokens from the built-in table, or None."""
    return BUILTIN_PRICES.get(model) or BUILTIN_PRICES.get(_base_name(model))


def _builtin_cost(model: str, prompt_tokens: float, completion_tokens: float) -> float | None:
    prices = price_per_million(model)
    if prices is None:
        return None
    return (prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1_000_000


def default_price() -> Callable[[str, float, float], float | None]:
    """The lab's price function (with its overrides) if available, else the built-in table."""
    from evals.lab import lab_price

    lab: Callable[[str, float, float], float | None] | None = lab_price()
    return lab or _builtin_cost


def count_tokens(text: object) -> int:
    """A rough token count (about four characters per token) for estimates."""
    if isinstance(text, str):
        return max(1, (len(text) + 3) // 4) if text else 0
    if isinstance(text, list):
        return sum(count_tokens(part.get("text", "")) for part in text if isinstance(part, dict))
    return 0
