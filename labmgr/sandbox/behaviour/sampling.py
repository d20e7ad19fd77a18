"""Random choices with a temperature, and the per-request random generator."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

__all__ = ["rank_pick", "request_seed", "sample_index"]


def request_seed(*parts: object) -> int:
    """A 64-bit seed from a request's identity (model, messages, parameters, seed)."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


def rank_pick(rng: random.Random, count: int, temperature: float) -> int:
    """An index into `count` options ranked best first.

    At temperature 0 the best option always; at 1 and above uniformly; in between,
    increasingly favouring the top of the ranking as the temperature drops.
    """
    if count <= 1 or temperature <= 0.0:
        return 0
    exponent = 1.0 / temperature if temperature < 1.0 else 1.0
    return min(count - 1, int(count * rng.random() ** exponent))


def sample_index(rng: random.Random, probabilities: Sequence[float], temperature: float) -> int:
    """Sample from listed probabilities (most likely first) at `temperature`."""
    if temperature <= 0.0 or len(probabilities) == 1:
        return 0
    if temperature == 1.0:
        weights: Sequence[float] = probabilities
    else:
        power = 1.0 / temperature
        weights = [p**power for p in probabilities]
    threshold = rng.random() * sum(weights)
    for index, weight in enumerate(weights):
        threshold -= weight
        if threshold < 0.0:
            return index
    return len(weights) - 1
