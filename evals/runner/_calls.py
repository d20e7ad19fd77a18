"""An API call to make, and the order calls are sent in."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass

from evals.cache import ChatRequest
from labmgr.routing import Endpoint


@dataclass(slots=True)
class Call:
    """Missing samples of one request, sent as one API call (several samples via `n`)."""

    request: ChatRequest
    label: str
    """The question name recorded in the cache (for `labmgr cache clear --question`)."""
    sample_ixs: list[int]
    endpoint: Endpoint
    logprobs: bool = False
    attempts: int = 0
    first_attempt: float = 0.0


def interleave(calls: list[Call]) -> list[Call]:
    """Round-robin over models so that load (and any 429s) spreads across them."""
    by_model: dict[str, deque[Call]] = defaultdict(deque)
    for call in calls:
        by_model[call.request.model].append(call)
    queues = list(by_model.values())
    ordered: list[Call] = []
    while queues:
        queues = [q for q in queues if q]
        for q in queues:
            ordered.append(q.popleft())
    return ordered
