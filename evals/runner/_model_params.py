"""Per-model request parameters: reasoning models (o-series, gpt-5, and fine-tunes of them)
take `max_completion_tokens` instead of `max_tokens`. The adapted parameters are what is sent
and what the cache key covers."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["is_reasoning_model", "params_for_model"]

_REASONING = re.compile(r"^(?:ft:)?(?:[\w-]+/)?(?:o\d|gpt-5)(?:[-:.]|$)")


def is_reasoning_model(model: str) -> bool:
    """`o1`, `o3-mini`, `o4-mini-2025-04-16`, `gpt-5-nano`, `ft:o4-mini:…`, `openai/gpt-5`."""
    return bool(_REASONING.match(model))


def params_for_model(model: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` as `model` accepts them."""
    if is_reasoning_model(model) and "max_tokens" in params:
        adapted = dict(params)
        adapted["max_completion_tokens"] = adapted.pop("max_tokens")
        return adapted
    return params
