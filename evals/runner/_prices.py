"""The price of a request: `labmgr.pricing` (the one price table) with a lab's `[prices]`
overrides, as the `(model, prompt_tokens, completion_tokens) -> dollars` function runs use."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from labmgr.pricing import Price

__all__ = ["TablePrice", "price_function"]


@functools.cache
def _table_source() -> bytes:
    """The built-in price table's source, read once a process."""
    from labmgr import pricing

    return Path(pricing.__file__ or "").read_bytes()


class TablePrice:
    """Dollars for `(model, prompt_tokens, completion_tokens)` from the built-in table, with
    `overrides` winning; None for a model without a price. `identity` names the prices (a
    digest of the table's source and the overrides): a frame priced by it may be reused
    wherever the identity is the same."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        from labmgr import pricing  # its table is built on import: only when a run prices

        self._cost = pricing.cost
        self._table = dict(overrides or {})

    @functools.cached_property
    def identity(self) -> str:
        text = json.dumps(
            {name: price.model_dump() for name, price in self._table.items()}, sort_keys=True
        )
        return hashlib.sha256(_table_source() + text.encode()).hexdigest()

    def __call__(self, model: str, prompt_tokens: float, completion_tokens: float) -> float | None:
        return self._cost(model, prompt_tokens, completion_tokens, overrides=self._table)


def price_function(overrides: Mapping[str, Price] | None = None) -> TablePrice:
    """Dollars for `(model, prompt_tokens, completion_tokens)` from the built-in table, with
    `overrides` (a lab's `Settings.prices`) winning; None for a model without a price."""
    return TablePrice(overrides)
