"""What a model request asks of the rate limits: its model and its tokens.

Tokens are counted as OpenAI counts them against a tokens-per-minute limit: the prompt's
tokens plus the requested completion budget (`max_completion_tokens` or `max_tokens`, times
`n`; a response's `max_output_tokens`). A request without a budget is admitted on its prompt
alone and the completion it produced is taken from the bucket after answering. The same
count decides how many tokens a batch enqueues.

`METERS` maps an endpoint's stats name to its reader; a new model endpoint adds one entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labmgr.sandbox.behaviour import prompt_tokens

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


def _positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def chat_demand(body: dict[str, Any]) -> Demand | None:
    """A `/v1/chat/completions` body's demand (None without a model name)."""
    model = body.get("model")
    if not isinstance(model, str):
        return None
    messages = body.get("messages")
    pairs = tuple(("", _text(m.get("content"))) for m in messages or () if isinstance(m, dict))
    prompt = prompt_tokens(pairs) if isinstance(messages, list) else 0
    budget = _positive_int(body.get("max_completion_tokens")) or _positive_int(
        body.get("max_tokens")
    )
    n = _positive_int(body.get("n")) or 1
    if budget is None:
        return Demand(model, prompt, budgeted=False)
    return Demand(model, prompt + budget * n)


def completion_demand(body: dict[str, Any]) -> Demand | None:
    """A `/v1/completions` body's demand: every prompt plus its budget for each choice."""
    model = body.get("model")
    if not isinstance(model, str):
        return None
    prompt = body.get("prompt")
    prompts = [p for p in (prompt if isinstance(prompt, list) else [prompt]) if isinstance(p, str)]
    budget = _positive_int(body.get("max_tokens")) or LEGACY_DEFAULT_MAX_TOKENS
    n = _positive_int(body.get("n")) or 1
    tokens = sum(prompt_tokens((("user", p),)) for p in prompts)
    return Demand(model, tokens + len(prompts) * n * budget)


def responses_demand(body: dict[str, Any]) -> Demand | None:
    """A `/v1/responses` body's demand: its instructions and input plus `max_output_tokens`.

    The history a `previous_response_id` brings is not counted (it is not in the body).
    """
    model = body.get("model")
    if not isinstance(model, str):
        return None
    raw = body.get("input")
    if isinstance(raw, str):
        pairs: tuple[tuple[str, str], ...] = (("user", raw),)
    elif isinstance(raw, list):
        pairs = tuple(
            ("", _text(item.get("content")))
            for item in raw
            if isinstance(item, dict) and item.get("type", "message") == "message"
        )
    else:
        pairs = ()
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        pairs = (("developer", instructions), *pairs)
    prompt = prompt_tokens(pairs) if pairs else 0
    budget = _positive_int(body.get("max_output_tokens"))
    if budget is None:
        return Demand(model, prompt, budgeted=False)
    return Demand(model, prompt + budget)


METERS: dict[str, Callable[[dict[str, Any]], Demand | None]] = {
    "chat.completions": chat_demand,
    "completions": completion_demand,
    "responses.create": responses_demand,
}
"""Stats name of a model endpoint → how to read its body's demand."""


def demand_of(endpoint: str, body: Any) -> Demand | None:
    """The demand of a request to `endpoint`, or None if it is not a (readable) model request."""
    meter = METERS.get(endpoint)
    if meter is None or not isinstance(body, dict):
        return None
    return meter(body)
