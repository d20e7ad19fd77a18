"""The price of a request: `labmgr.pricing` (the one price table) with a lab's `[prices]`
overrides, as the `(model, prompt_tokens, completion_tokens) -> dollars` function runs use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evals.runner._outcome import PriceFunction
    from labmgr.pricing import Price

__all__ = ["price_function"]


def price_function(overrides: Mapping[str, Price] | None = None) -> PriceFunction:
    """Dollars for `(model, prompt_tokens, completion_tokens)` from the built-in table, with
    `overrides` (a lab's `Settings.prices`) winning; None for a model without a price."""
    from labmgr.pricing import cost  # its table is built on import: only when a run prices

    table = dict(overrides or {})

    def price(model: str, prompt_tokens: float, completion_tokens: float) -> float | None:
        return cost(model, prompt_tokens, completion_tokens, overrides=table)

    return price
