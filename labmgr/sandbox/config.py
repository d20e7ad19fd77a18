"""What a sandbox is started with: one checked settings object, sent to a subprocess as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from labmgr.sandbox.behaviour import JUDGE_ERROR
from labmgr.sandbox.errors import SandboxError
from labmgr.sandbox.limits import LimitTable


class SandboxConfigError(SandboxError, ValueError):
    """A setting that cannot be used (the message names the setting and the fix)."""


@dataclass(frozen=True)
class SandboxConfig:
    """Everything a sandbox is started with. Checked once, when it is made."""

    job_seconds: float = 1.0
    """How long a fine-tuning job takes from creation to its final state, in seconds."""
    batch_seconds: float = 1.0
    """How long a batch takes from creation to `completed`, in seconds."""
    latency_ms: float = 0.0
    """Latency added to every `/v1` request, in milliseconds (a fault setting at start)."""
    jitter_ms: float = 0.0
    """Random ± jitter on that latency, in milliseconds."""
    state_dir: Path | None = None
    """Directory that keeps files, jobs, batches and models across restarts (None: memory)."""
    accounts: Path | None = None
    """YAML or JSON file mapping API keys to organizations and projects (None: any key)."""
    limits: LimitTable = field(default_factory=LimitTable)
    """Rate limits enforced from the start (empty: none; `POST /sandbox/limits` changes them)."""
    batch_max_requests: int = 50_000
    """Requests one batch may hold (the real API's limit); more fail validation."""
    batch_max_file_bytes: int = 200 * 1024 * 1024
    """Bytes a `purpose=batch` upload may have (the real API's 200 MB)."""
    judge_error: dict[str, float] = field(default_factory=lambda: {"*": JUDGE_ERROR})
    """Model id → probability that a pairwise or label verdict is the wrong one (``*``:
    every other model; an alias covers its snapshots, a base model its fine-tunes)."""
    position_bias: dict[str, float] = field(default_factory=lambda: {"*": 0.0})
    """Model id → probability that a pairwise verdict is simply the first-shown answer, A."""

    def __post_init__(self) -> None:
        for name in ("job_seconds", "batch_seconds"):
            value = getattr(self, name)
            if not _number(value) or value <= 0:
                raise SandboxConfigError(f"{name} must be a positive number of seconds")
        for name in ("latency_ms", "jitter_ms"):
            value = getattr(self, name)
            if not _number(value) or value < 0:
                raise SandboxConfigError(f"{name} must be a non-negative number of milliseconds")
        for name in ("batch_max_requests", "batch_max_file_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SandboxConfigError(f"{name} must be a positive integer")
        for name in ("judge_error", "position_bias"):
            table = getattr(self, name)
            if not isinstance(table, dict) or not all(
                isinstance(model, str) and model and _number(rate) and 0 <= rate <= 1
                for model, rate in table.items()
            ):
                raise SandboxConfigError(
                    f"{name} must map model ids (or *) to probabilities between 0 and 1"
                )
        if not isinstance(self.limits, LimitTable):
            raise SandboxConfigError("limits must be a LimitTable (use SandboxConfig.of)")

    @classmethod
    def of(cls, **options: Any) -> SandboxConfig:
        """A config from loose values: paths as strings, `limits` as a body, file or table."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(
                f"unknown sandbox setting(s): {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        for name in ("state_dir", "accounts"):
            if options.get(name) is not None:
                options[name] = Path(options[name])
        limits = options.get("limits")
        if limits is None:
            options.pop("limits", None)
        elif isinstance(limits, str | Path):
            options["limits"] = LimitTable.from_file(limits)
        elif not isinstance(limits, LimitTable):
            options["limits"] = LimitTable.from_json(limits, source="limits")
        return cls(**options)

    def to_json(self) -> str:
        return json.dumps(asdict(self) | {"limits": self.limits.to_json()}, default=str)

    @classmethod
    def from_json(cls, text: str) -> SandboxConfig:
        return cls.of(**json.loads(text))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
