"""What a run reports back, kept apart from the runner so that reading a fully cached
question never imports the HTTP stack (the OpenAI SDK, httpx, aiohttp)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["PriceFunction", "RunOutcome"]

PriceFunction = Callable[[str, float, float], float | None]
"""`(model, prompt_tokens, completion_tokens) -> dollars` (None when the price is unknown)."""


@dataclass
class RunOutcome:
    """What happened to the samples a run did not get."""

    errors: dict[tuple[str, int], str] = field(default_factory=dict)
    """`(cache_key, sample_ix) -> message` for each sample left without an answer."""
    failed_models: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None
    requests: int = 0
    samples: int = 0
    cost: float = 0.0
