"""The sandbox's shared state: config, store, simulator, accounts, faults, limits, counters."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import labmgr.sandbox.batches as batches
import labmgr.sandbox.finetuning as finetuning
from labmgr.sandbox.accounts import Account, AccountBook
from labmgr.sandbox.behaviour import ChatSimulator, JudgeSettings
from labmgr.sandbox.config import SandboxConfig
from labmgr.sandbox.faults import Faults
from labmgr.sandbox.limits import RateLimiter
from labmgr.sandbox.store import Store


class Stats:
    """Requests per endpoint, usage per model, statuses, refusals, peak concurrency."""

    def __init__(self) -> None:
        self.in_flight = 0
        """Requests being answered now: a gauge, which a reset keeps."""
        self.reset()

    def reset(self) -> None:
        self.requests: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.models: dict[str, Counter[str]] = {}
        self.model_endpoints: dict[str, Counter[str]] = {}
        self.rate_limited: Counter[str] = Counter()
        """Refusals by enforced limits, per model asked."""
        self.peak_concurrency = self.in_flight

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


class Sandbox:
    """Everything one running sandbox knows; handlers receive it as their first argument."""

    def __init__(self, config: SandboxConfig, accounts: AccountBook) -> None:
        self.config = config
        self.accounts = accounts
        self.store = Store(config.state_dir)
        self.simulator = ChatSimulator(
            judges=JudgeSettings(config.judge_error, config.position_bias)
        )
        self.stats = Stats()
        self.initial_faults = Faults(latency_ms=config.latency_ms, jitter_ms=config.jitter_ms)
        self.reset()
        self.timelines: dict[str, tuple[int, list[Any]]] = {}
        """Job id → (the actions counted, the job's timeline)."""
        finetuning.restore(self)

    @staticmethod
    def now() -> float:
        return time.time()

    def reset(self) -> None:
        """Back to the start-up faults and limits (buckets full), counters cleared."""
        self.stats.reset()
        self.faults = self.initial_faults.model_copy(deep=True)
        self.limiter = RateLimiter(self.config.limits)

    def model_record(self, model: str, account: Account) -> dict[str, Any] | None:
        """The fine-tuned model `model` if it exists for `account` (settling due jobs first)."""
        if model not in self.store.models and model.startswith("ft:"):
            finetuning.settle_due(self, self.now())
        return self.store.visible(self.store.models, model, account.scope)

    def settle(self) -> None:
        now = self.now()
        finetuning.settle_due(self, now)
        batches.settle_due(self, now)
