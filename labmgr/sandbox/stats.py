"""Counters of what the sandbox served, for `GET /sandbox/stats`."""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["Stats"]


class Stats:
    """Requests per endpoint, usage per model, responses per status, rate-limit refusals,
    peak concurrency."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.models: dict[str, list[int]] = {}
        self.model_endpoints: dict[str, Counter[str]] = {}
        self.rate_limited: Counter[str] = Counter()
        """429 `rate_limit_exceeded` answers from enforced limits, per model asked."""
        self.in_flight = 0
        self.peak_concurrency = 0

    def enter(self, endpoint: str) -> None:
        """A request to `endpoint` (e.g. ``chat.completions``) started."""
        self.requests[endpoint] += 1
        self.in_flight += 1
        if self.in_flight > self.peak_concurrency:
            self.peak_concurrency = self.in_flight

    def leave(self, status: int | str) -> None:
        """A request finished with HTTP `status` (or ``dropped``/``timeout``/``no_response``)."""
        self.in_flight -= 1
        self.statuses[str(status)] += 1

    def usage(
        self,
        model: str,
        choices: int,
        prompt_tokens: int,
        completion_tokens: int,
        endpoint: str = "chat.completions",
    ) -> None:
        """A completion for `model` through `endpoint` (its stats name) served `choices`
        samples with this token usage (input and output tokens for responses)."""
        row = self.models.get(model)
        if row is None:
            row = self.models[model] = [0, 0, 0, 0]
            self.model_endpoints[model] = Counter()
        self.model_endpoints[model][endpoint] += 1
        row[0] += 1
        row[1] += choices
        row[2] += prompt_tokens
        row[3] += completion_tokens

    def snapshot(self) -> dict[str, Any]:
        """The JSON body of `GET /sandbox/stats`."""
        return {
            "requests": dict(sorted(self.requests.items())),
            "models": {
                model: {
                    "requests": row[0],
                    "choices": row[1],
                    "prompt_tokens": row[2],
                    "completion_tokens": row[3],
                    "endpoints": dict(sorted(self.model_endpoints[model].items())),
                }
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
