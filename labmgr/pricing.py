"""Prices of OpenAI models in USD per million tokens (the standard tier of 2025-08; a lab's
``[prices]`` win, exact id then globs), and the cost of a request. Ids match as given, then
without a ``-YYYY-MM-DD`` date; ``ft:BASE:…`` costs BASE's fine-tuned price."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")
BATCH_DISCOUNT = 0.5
"""What a request costs through the Batch API, as a share of its synchronous price."""


class Price(BaseModel):
    """What one model costs, in USD per 1M tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    input: float = Field(ge=0)
    """Uncached prompt tokens."""
    output: float = Field(ge=0)
    """Completion tokens (reasoning tokens included)."""
    cached_input: float | None = Field(default=None, ge=0)
    """Prompt tokens served from the prompt cache; None means the same as `input`."""
    training: float | None = Field(default=None, ge=0)
    """Supervised/DPO fine-tuning, per 1M trained tokens; None when not billed per token."""


def _p(inp: float, cached: float | None, out: float, training: float | None = None) -> Price:
    return Price(input=inp, cached_input=cached, output=out, training=training)


# model -> (price of the model itself, price of a model fine-tuned from it or None)
_TABLE: dict[str, tuple[Price, Price | None]] = {
    "gpt-5": (_p(1.25, 0.125, 10.0), None),
    "gpt-5-mini": (_p(0.25, 0.025, 2.0), None),
    "gpt-5-nano": (_p(0.05, 0.005, 0.40), None),
    "gpt-4.1": (_p(2.0, 0.50, 8.0, training=25.0), _p(3.0, 0.75, 12.0)),
    "gpt-4.1-mini": (_p(0.40, 0.10, 1.60, training=5.0), _p(0.80, 0.20, 3.20)),
    "gpt-4.1-nano": (_p(0.10, 0.025, 0.40, training=1.50), _p(0.20, 0.05, 0.80)),
    "gpt-4o": (_p(2.50, 1.25, 10.0, training=25.0), _p(3.75, 1.875, 15.0)),
    "gpt-4o-2024-05-13": (_p(5.0, None, 15.0), None),
    "gpt-4o-mini": (_p(0.15, 0.075, 0.60, training=3.0), _p(0.30, 0.15, 1.20)),
    "o4-mini": (_p(1.10, 0.275, 4.40), _p(4.0, 1.0, 16.0)),  # RFT is billed per hour
    "o3": (_p(2.0, 0.50, 8.0), None),
    "o3-mini": (_p(1.10, 0.55, 4.40), None),
    "o1": (_p(15.0, 7.50, 60.0), None),
    "o1-mini": (_p(1.10, 0.55, 4.40), None),
    "gpt-4-turbo": (_p(10.0, None, 30.0), None),
    "gpt-4": (_p(30.0, None, 60.0), None),
    "gpt-3.5-turbo": (_p(0.50, None, 1.50, training=8.0), _p(3.0, None, 6.0)),
    "gpt-3.5-turbo-0125": (_p(0.50, None, 1.50, training=8.0), _p(3.0, None, 6.0)),
    "davinci-002": (_p(2.0, None, 2.0, training=6.0), _p(12.0, None, 12.0)),
    "babbage-002": (_p(0.40, None, 0.40, training=0.40), _p(1.60, None, 1.60)),
}

_SNAPSHOT_DATE = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def base_of(model: str) -> str:
    """The base model of a fine-tuned id (``ft:BASE:org:suffix:id`` → BASE), else `model`."""
    if model.startswith("ft:"):
        parts = model.split(":")
        if len(parts) >= 2 and parts[1]:
            return parts[1]
    return model


def _table_entry(model: str) -> tuple[Price, Price | None] | None:
    return _TABLE.get(model) or _TABLE.get(_SNAPSHOT_DATE.sub("", model))


def first_match(model: str, table: Mapping[str, T]) -> tuple[str, T] | None:
    """The entry of `table` for `model`: its exact id, else the first glob matching it."""
    if model in table:
        return model, table[model]
    for pattern, value in table.items():
        if fnmatch.fnmatchcase(model, pattern):
            return pattern, value
    return None


def price_for(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of calling `model`, or None; the lab's `overrides` come first. A fine-tuned
    id's price carries its base's `training` price."""
    overrides = overrides or {}
    found = first_match(model, overrides)
    if found is not None:
        return found[1]
    if not model.startswith("ft:"):
        entry = _table_entry(model)
        return entry[0] if entry else None
    base = base_of(model)
    entry = _table_entry(base)
    if entry is None or entry[1] is None:
        return None
    base_override = first_match(base, overrides)
    training = entry[0].training
    if base_override is not None and base_override[1].training is not None:
        training = base_override[1].training
    return entry[1].model_copy(update={"training": training})


def cost(
    model: str,
    prompt_tokens: float,
    completion_tokens: float,
    cached: float = 0,
    overrides: Mapping[str, Price] | None = None,
    *,
    batch: bool = False,
) -> float | None:
    """USD cost of one request, or None without a known price; `prompt_tokens` includes the
    `cached` ones (as ``usage`` reports them); `batch`: through the Batch API."""
    price = price_for(model, overrides)
    if price is None:
        return None
    cached = max(0, min(cached, prompt_tokens))
    cached_rate = price.input if price.cached_input is None else price.cached_input
    dollars = (
        (prompt_tokens - cached) * price.input
        + cached * cached_rate
        + completion_tokens * price.output
    )
    return dollars / 1_000_000 * (BATCH_DISCOUNT if batch else 1.0)


def training_cost(
    base_model: str, trained_tokens: int, overrides: Mapping[str, Price] | None = None
) -> float | None:
    """USD cost of fine-tuning `base_model` on `trained_tokens` tokens, or None if unknown."""
    price = price_for(base_model, overrides)
    if price is None or price.training is None:
        return None
    return trained_tokens * price.training / 1_000_000
