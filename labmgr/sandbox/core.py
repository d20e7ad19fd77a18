"""The sandbox's shared state: store, simulator, accounts, faults and counters."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from labmgr.sandbox.accounts import Account, AccountBook
from labmgr.sandbox.behaviour import CATALOGUE, ChatSimulator
from labmgr.sandbox.faults import Faults
from labmgr.sandbox.stats import Stats
from labmgr.sandbox.store import Store

__all__ = ["Sandbox"]


class Sandbox:
    """Everything one running sandbox knows; handlers receive it as their first argument."""

    def __init__(
        self,
        *,
        job_seconds: float = 1.0,
        latency_ms: float = 0.0,
        jitter_ms: float = 0.0,
        state_dir: str | Path | None = None,
        accounts: AccountBook | None = None,
    ) -> None:
        if job_seconds <= 0:
            raise ValueError(f"job_seconds must be positive, got {job_seconds}")
        self.job_seconds = float(job_seconds)
        self.accounts = accounts or AccountBook()
        self.store = Store(state_dir)
        self.simulator = ChatSimulator()
        self.stats = Stats()
        self.initial_faults = Faults(latency_ms=float(latency_ms), jitter_ms=float(jitter_ms))
        self.faults = replace(self.initial_faults)
        self.snapshots = {
            card.snapshot_of: card.id for card in CATALOGUE.values() if card.snapshot_of
        }
        """Alias → dated snapshot, e.g. ``gpt-4o-mini`` → ``gpt-4o-mini-2024-07-18``."""
        self.timelines: dict[str, tuple[int, list[Any]]] = {}
        """Each job's computed timeline, keyed by job id, with the action count it reflects."""
        from labmgr.sandbox import batches, finetuning

        self._finetuning = finetuning
        self._batches = batches
        finetuning.restore(self)

    @staticmethod
    def now() -> float:
        return time.time()

    def reset(self) -> None:
        """Clear counters and faults (back to the start-up latency); keep files, jobs, models."""
        self.stats.reset()
        self.faults = replace(self.initial_faults)

    def model_record(self, model: str, account: Account) -> dict[str, Any] | None:
        """The fine-tuned model `model` if it exists for `account` (settling due jobs first)."""
        record = self.store.models.get(model)
        if record is None and model.startswith("ft:"):
            self._finetuning.settle_due(self, self.now())
            record = self.store.models.get(model)
        if record is None or record["scope"] != account.scope:
            return None
        return record

    def model_visible(self, model: str, account: Account) -> bool:
        """Whether `account` may use `model` (a catalogue model or one of its fine-tunes)."""
        return model in CATALOGUE or self.model_record(model, account) is not None

    def settle(self) -> None:
        """Bring due jobs and batches to their final state (register models, write files)."""
        now = self.now()
        self._finetuning.settle_due(self, now)
        self._batches.settle_due(self, now)
