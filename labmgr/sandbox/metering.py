"""What a model request asks of the rate limits: its model and its tokens.

Tokens count as OpenAI counts them against a tokens-per-minute limit: the prompt plus the
requested completion budget (`max_completion_tokens` or `max_tokens` times `n`; a
response's `max_output_tokens`). A request without a budget is admitted on its prompt and
its completion is taken afterwards. The same count decides what a batch enqueues.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labmgr.sandbox.behaviour import content_text, prompt_tokens

__all__ = ["METERS", "Demand", "demand_of"]

LEGACY_DEFAULT_MAX_TOKENS = 16
"""`/v1/completions` generates at most 16 tokens when `max_tokens` is not given."""


@dataclass(frozen=True, slots=True)
class Demand:
    """The model a request is for and the tokens it counts against the limits."""

    model: str
    tokens: int
    budgeted: bool = True
    """False when no completion budget was given: the completion is counted afterwards."""


def _positive(body: dict[str, Any], *params: str) -> int | None:
    for param in params:
        value = body.get(param)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _demand(model: str, prompt: list[str], budget: int | None) -> Demand:
    tokens = prompt_tokens(tuple(("", text) for text in prompt)) if prompt else 0
    return Demand(model, tokens + (budget or 0), budget is not None)


def chat_demand(body: dict[str, Any], model: str) -> Demand:
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    texts = [content_text(m.get("content")) for m in messages if isinstance(m, dict)]
    budget = _positive(body, "max_completion_tokens", "max_tokens")
    return _demand(model, texts, budget and budget * (_positive(body, "n") or 1))


def completion_demand(body: dict[str, Any], model: str) -> Demand:
    """Every prompt plus its budget (16 by default) for each choice."""
    prompt = body.get("prompt")
    prompts = [p for p in (prompt if isinstance(prompt, list) else [prompt]) if isinstance(p, str)]
    budget = _positive(body, "max_tokens") or LEGACY_DEFAULT_MAX_TOKENS
    tokens = sum(prompt_tokens((("user", p),)) for p in prompts)
    return Demand(model, tokens + len(prompts) * (_positive(body, "n") or 1) * budget)


def responses_demand(body: dict[str, Any], model: str) -> Demand:
    """Instructions and input plus `max_output_tokens` (not a `previous_response_id`'s)."""
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else []
    if isinstance(raw, list):
        items = (i for i in raw if isinstance(i, dict) and i.get("type", "message") == "message")
        texts = [content_text(item.get("content")) for item in items]
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        texts.insert(0, instructions)
    return _demand(model, texts, _positive(body, "max_output_tokens"))


METERS: dict[str, Callable[[dict[str, Any], str], Demand]] = {
    "chat.completions": chat_demand,
    "completions": completion_demand,
    "responses.create": responses_demand,
}
"""Stats name of a model endpoint → how to read its body's demand."""


def demand_of(endpoint: str, body: Any) -> Demand | None:
    """The demand of a request to `endpoint`, or None if it is not a (readable) model request."""
    meter = METERS.get(endpoint)
    if meter is None or not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return None
    return meter(body, body["model"])
