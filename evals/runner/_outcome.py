"""What a run costs and reports back: what it bought and what it did not get (apart from the
engine: a fully cached read never imports the HTTP stack)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evals.runner._choices import ReadChoices
    from labmgr.pricing import Price

PriceFunction = Callable[[str, float, float], float | None]
"""`(model, prompt_tokens, completion_tokens) -> dollars` (None when the price is unknown)."""


def price_function(overrides: Mapping[str, Price] | None = None) -> PriceFunction:
    """Prices from the built-in table with `overrides` (a lab's `prices`) winning."""
    from labmgr import pricing  # its table is built on import: only when a run prices

    return functools.partial(pricing.cost, overrides=dict(overrides or {}))


@dataclass(frozen=True)
class BudgetCut:
    """A model's answers that came back empty because its token budget ran out (spent on
    reasoning), and how far to raise it."""

    empty: int
    """Answers that are empty with `finish_reason` "length"."""
    answers: int
    parameter: str
    """``max_completion_tokens`` or ``max_tokens``."""
    limit: int | None
    """The budget sent (None if not found in the request)."""
    suggested: int
    """A budget to try."""

    def message(self, model: str) -> str:
        budget = f"{self.parameter}={self.limit}" if self.limit else "its token budget"
        return (
            f"{self.empty} of {self.answers} answers of {model} are empty: {budget} was spent "
            f"before any visible output (on reasoning); raise max_tokens to {self.suggested} "
            "or more"
        )


@dataclass
class RunOutcome:
    """What a run bought, and what happened to the samples it did not get."""

    errors: dict[tuple[str, int], str] = field(default_factory=dict)
    """`(cache_key, sample_ix) -> message` for each sample left without an answer."""
    failed_models: dict[str, str] = field(default_factory=dict)
    """Models given up on during the run (404, no access), with the reason."""
    unrouted_models: dict[str, str] = field(default_factory=dict)
    """Models not asked at all: no endpoint (or no key) serves them."""
    stopped: str | None = None
    """Why the run stopped sending requests early (cost limit, quota), or None."""
    budget_cuts: dict[str, BudgetCut] = field(default_factory=dict)
    requests: int = 0
    """API requests answered (one may hold several samples)."""
    samples: int = 0
    """Samples bought and stored."""
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    """Reasoning tokens included."""
    reasoning_tokens: float = 0.0
    cost: float = 0.0
    """Dollars spent (unpriced models count 0; batches at the batch price)."""
    pending: int = 0
    """Samples left in batches still running."""
    cached: int = 0
    """Samples the cache already held."""

    def count(self, read: ReadChoices, cost: float) -> None:
        """One answered request: its usage and what it cost."""
        self.requests += 1
        self.prompt_tokens += read.prompt_tokens
        self.completion_tokens += read.completion_tokens
        self.reasoning_tokens += read.reasoning_tokens
        self.cost += cost

    def add(self, other: RunOutcome) -> None:
        """Take in the outcome of a later part of the same run (say, its judges)."""
        self.errors.update(other.errors)
        for name in ("failed_models", "unrouted_models", "budget_cuts"):
            mine = getattr(self, name)
            for model, value in getattr(other, name).items():
                mine.setdefault(model, value)
        self.stopped = self.stopped or other.stopped
        for counter in fields(self)[5:]:  # the counts, from `requests` on
            setattr(self, counter.name, getattr(self, counter.name) + getattr(other, counter.name))

    def messages(self) -> list[str]:
        """One sentence per problem of the run."""
        lines = [f"model {m} was not asked: {why}" for m, why in self.unrouted_models.items()]
        lines += [f"model {m} failed: {why}" for m, why in self.failed_models.items()]
        lines += [cut.message(model) for model, cut in self.budget_cuts.items()]
        if self.stopped:
            lines.append(f"the run stopped early: {self.stopped}")
        if self.pending:
            lines.append(
                f"{self.pending} samples wait in batches still running; run again or "
                "`labmgr batches collect` to collect them"
            )
        return lines
