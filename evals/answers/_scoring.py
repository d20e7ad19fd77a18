"""Turning first-token logprobs into answers: rating scores and next-token distributions.

Both work on the top logprobs of the first generated token, stored as `[(token, logprob), …]`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["RatingScore", "average_probabilities", "rating_score", "token_probabilities"]

TopLogprobs = Sequence[tuple[str, float]]


def token_probabilities(top: TopLogprobs) -> dict[str, float]:
    """`{token: probability}`; a token listed twice has its probabilities summed."""
    probs: dict[str, float] = {}
    for token, logprob in top:
        probs[token] = probs.get(token, 0.0) + math.exp(logprob)
    return probs


@dataclass(frozen=True)
class RatingScore:
    """A rating read from logprobs: the expected value, or None with the reason."""

    score: float | None
    probs: dict[int, float] | None
    """Normalised probability of each integer in range (None when refused)."""
    refusal: str | None = None


def _as_int(token: str) -> int | None:
    try:
        return int(token)
    except ValueError:
        return None


def rating_score(
    raw: dict[str, float], *, min_rating: int, max_rating: int, refusal_threshold: float
) -> RatingScore:
    """The established single-token rating algorithm.

    Tokens that parse as integers within `[min_rating, max_rating]` count (tokens mapping to the
    same integer are summed); if less than `1 - refusal_threshold` of the probability mass is on
    them, the answer is a refusal (None).
    """
    by_value: dict[int, float] = {}
    for token, prob in raw.items():
        value = _as_int(token)
        if value is not None and min_rating <= value <= max_rating:
            by_value[value] = by_value.get(value, 0.0) + prob
    total = sum(by_value.values())
    if total <= 0:
        return RatingScore(None, None, "no numeric token in range")
    if 1.0 - total >= refusal_threshold:
        return RatingScore(None, None, f"only {total:.0%} of the probability on valid numbers")
    probs = {value: prob / total for value, prob in sorted(by_value.items())}
    return RatingScore(sum(value * prob for value, prob in probs.items()), probs)


def average_probabilities(
    samples: Iterable[dict[str, float]], *, as_logprobs: bool = False
) -> dict[str, float]:
    """Average token distributions over samples, a missing token counting as probability 0.

    With `as_logprobs` the averaged probabilities are returned as log-probabilities (a token
    absent from every sample never appears). Sorted by probability, highest first.
    """
    totals: dict[str, float] = {}
    count = 0
    for probs in samples:
        count += 1
        for token, prob in probs.items():
            totals[token] = totals.get(token, 0.0) + prob
    if count == 0:
        return {}
    averaged = sorted(((t, p / count) for t, p in totals.items()), key=lambda kv: -kv[1])
    if as_logprobs:
        return {token: math.log(prob) if prob > 0 else -math.inf for token, prob in averaged}
    return dict(averaged)
