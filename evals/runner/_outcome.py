"""What a run reports back: what it bought and what it did not get. Kept apart from the engine
so that reading a fully cached question never imports the HTTP stack (the OpenAI SDK, httpx,
aiohttp)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["PriceFunction", "RunOutcome"]

PriceFunction = Callable[[str, float, float], float | None]
"""`(model, prompt_tokens, completion_tokens) -> dollars` (None when the price is unknown)."""


@dataclass
class RunOutcome:
    """What a run bought, and what happened to the samples it did not get."""

    errors: dict[tuple[str, int], str] = field(default_factory=dict)
    """`(cache_key, sample_ix) -> message` for each sample left without an answer."""
    failed_models: dict[str, str] = field(default_factory=dict)
    """Models given up on during the run (404, no access), with the reason."""
    unrouted_models: dict[str, str] = field(default_factory=dict)
    """Models that were not asked at all: no endpoint (or no key) serves them."""
    stopped: str | None = None
    """Why the run stopped sending requests early (cost limit, quota), or None."""
    requests: int = 0
    """API requests that were answered (one request may hold several samples)."""
    samples: int = 0
    """Samples bought and stored in the cache."""
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    cost: float = 0.0
    """Dollars spent on the answered requests (requests of unpriced models count 0; through
    the Batch API at the batch price)."""
    pending: int = 0
    """Samples left in batches still running (a run that did not wait for them)."""

    def add(self, other: RunOutcome) -> None:
        """Take in the outcome of a later part of the same run (say, its judges)."""
        self.errors.update(other.errors)
        for model, message in other.failed_models.items():
            self.failed_models.setdefault(model, message)
        for model, message in other.unrouted_models.items():
            self.unrouted_models.setdefault(model, message)
        self.stopped = self.stopped or other.stopped
        self.requests += other.requests
        self.samples += other.samples
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost += other.cost
        self.pending += other.pending

    def messages(self) -> list[str]:
        """One sentence per problem: models not asked, models that failed, an early stop."""
        lines = [f"model {m} was not asked: {why}" for m, why in self.unrouted_models.items()]
        lines += [f"model {m} failed: {why}" for m, why in self.failed_models.items()]
        if self.stopped:
            lines.append(f"the run stopped early: {self.stopped}")
        if self.pending:
            lines.append(
                f"{self.pending} samples wait in batches still running; run again or "
                "`labmgr batches collect` to collect them"
            )
        return lines
