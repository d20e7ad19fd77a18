"""Counters of what the sandbox served, for `GET /sandbox/stats`."""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["Stats"]


class Stats:
    """Requests per endpoint, usage per model, statuses, refusals, peak concurrency."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.models: dict[str, Counter[str]] = {}
        self.model_endpoints: dict[str, Counter[str]] = {}
        self.rate_limited: Counter[str] = Counter()
        """Refusals by enforced limits, per model asked."""
        self.in_flight = 0
        self.peak_concurrency = 0

    def enter(self, endpoint: str) -> None:
        self.requests[endpoint] += 1
        self.in_flight += 1
        self.peak_concurrency = max(self.peak_concurrency, self.in_flight)

    def leave(self, status: int | str) -> None:
        """A request ended with HTTP `status` (or ``dropped``/``timeout``/``no_response``)."""
        self.in_flight -= 1
        self.statuses[str(status)] += 1

    def usage(
        self, model: str, choices: int, prompt_tokens: int, completion_tokens: int, endpoint: str
    ) -> None:
        """`model` served `choices` samples through `endpoint` (its stats name)."""
        row = self.models.setdefault(model, Counter())
        row.update(requests=1, choices=choices, prompt_tokens=prompt_tokens)
        row.update(completion_tokens=completion_tokens)
        self.model_endpoints.setdefault(model, Counter())[endpoint] += 1

    def snapshot(self) -> dict[str, Any]:
        """The JSON body of `GET /sandbox/stats`."""
        columns = ("requests", "choices", "prompt_tokens", "completion_tokens")
        return {
            "requests": dict(sorted(self.requests.items())),
            "models": {
                model: {k: row[k] for k in columns}
                | {"endpoints": dict(sorted(self.model_endpoints[model].items()))}
                for model, row in sorted(self.models.items())
            },
            "peak_concurrency": self.peak_concurrency,
            "in_flight": self.in_flight,
            "statuses": dict(sorted(self.statuses.items())),
            "faults_injected": dict(sorted(self.faults.items())),
            "rate_limited": {
                "total": sum(self.rate_limited.values()),
                "models": dict(sorted(self.rate_limited.items())),
            },
        }
