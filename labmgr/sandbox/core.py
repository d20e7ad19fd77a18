"""The sandbox's shared state: config, store, simulator, accounts, faults, limits, counters.

The app hands `Sandbox` the functions that settle jobs and batches, so this module imports
neither resource.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from labmgr.sandbox.accounts import Account, AccountBook
from labmgr.sandbox.behaviour import CATALOGUE, ChatSimulator
from labmgr.sandbox.config import SandboxConfig
from labmgr.sandbox.faults import Faults
from labmgr.sandbox.limiter import RateLimiter
from labmgr.sandbox.stats import Stats
from labmgr.sandbox.store import Store

__all__ = ["Sandbox", "Settle"]

Settle = Callable[["Sandbox", float], None]


class Sandbox:
    """Everything one running sandbox knows; handlers receive it as their first argument."""

    def __init__(
        self,
        config: SandboxConfig,
        *,
        accounts: AccountBook,
        settle_jobs: Settle,
        settle_batches: Settle,
    ) -> None:
        self.config = config
        self.accounts = accounts
        self.store = Store(config.state_dir)
        self.simulator = ChatSimulator()
        self.stats = Stats()
        self.initial_faults = Faults(latency_ms=config.latency_ms, jitter_ms=config.jitter_ms)
        self.faults = replace(self.initial_faults)
        self.limiter = RateLimiter(config.limits)
        self.snapshots = {
            card.snapshot_of: card.id for card in CATALOGUE.values() if card.snapshot_of
        }
        """Alias → dated snapshot, e.g. ``gpt-4o-mini`` → ``gpt-4o-mini-2024-07-18``."""
        self.timelines: dict[str, tuple[int, list[Any]]] = {}
        """Job id → (the actions counted, the job's timeline)."""
        self._settle_jobs = settle_jobs
        self._settle_batches = settle_batches

    @staticmethod
    def now() -> float:
        return time.time()

    def reset(self) -> None:
        """Back to the start-up faults and limits (buckets full), counters cleared."""
        self.stats.reset()
        self.faults = replace(self.initial_faults)
        self.limiter = RateLimiter(self.config.limits)

    def model_record(self, model: str, account: Account) -> dict[str, Any] | None:
        """The fine-tuned model `model` if it exists for `account` (settling due jobs first)."""
        record = self.store.models.get(model)
        if record is None and model.startswith("ft:"):
            self._settle_jobs(self, self.now())
            record = self.store.models.get(model)
        if record is None or record["scope"] != account.scope:
            return None
        return record

    def settle(self) -> None:
        """Bring due jobs and batches to their final state (register models, write files)."""
        now = self.now()
        self._settle_jobs(self, now)
        self._settle_batches(self, now)
