"""What a sandbox is started with: one checked settings object, sent to a subprocess as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer

from labmgr.sandbox.behaviour import JUDGE_ERROR
from labmgr.sandbox.errors import STRICT, SandboxError, problem
from labmgr.sandbox.limits import LimitTable

FilePath = Annotated[Path | None, Field(strict=False)]
Rates = dict[Annotated[str, Field(min_length=1)], Annotated[float, Field(ge=0, le=1)]]


class SandboxConfigError(SandboxError, ValueError):
    """A setting that cannot be used (the message names the setting and the fix)."""


class SandboxConfig(BaseModel):
    """Everything a sandbox is started with. Checked once, when it is made."""

    model_config = STRICT | ConfigDict(frozen=True, arbitrary_types_allowed=True)

    job_seconds: float = Field(1.0, gt=0)
    """How long a fine-tuning job takes from creation to its final state, in seconds."""
    batch_seconds: float = Field(1.0, gt=0)
    """How long a batch takes from creation to `completed`, in seconds."""
    latency_ms: float = Field(0.0, ge=0)
    """Latency added to every `/v1` request, in milliseconds (a fault setting at start)."""
    jitter_ms: float = Field(0.0, ge=0)
    """Random ± jitter on that latency, in milliseconds."""
    state_dir: FilePath = None
    """Directory that keeps files, jobs, batches and models across restarts (None: memory)."""
    accounts: FilePath = None
    """YAML or JSON file mapping API keys to organizations and projects (None: any key)."""
    limits: LimitTable = Field(default_factory=LimitTable)
    """Rate limits enforced from the start (empty: none; `POST /sandbox/limits` changes them)."""
    batch_max_requests: int = Field(50_000, ge=1)
    """Requests one batch may hold (the real API's limit); more fail validation."""
    batch_max_file_bytes: int = Field(200 * 1024 * 1024, ge=1)
    """Bytes a `purpose=batch` upload may have (the real API's 200 MB)."""
    judge_error: Rates = Field(default_factory=lambda: {"*": JUDGE_ERROR})
    """Model id → probability that a pairwise or label verdict is the wrong one (``*``:
    every other model; an alias covers its snapshots, a base model its fine-tunes)."""
    position_bias: Rates = Field(default_factory=lambda: {"*": 0.0})
    """Model id → probability that a pairwise verdict is simply the first-shown answer, A."""

    def __init__(self, **settings: Any) -> None:
        try:
            super().__init__(**settings)
        except ValidationError as exc:
            raise SandboxConfigError(problem(exc)) from None

    @field_serializer("limits")
    def _limits_body(self, limits: LimitTable) -> dict[str, Any]:
        return limits.to_json()

    @classmethod
    def of(cls, **options: Any) -> SandboxConfig:
        """A config from loose values: `limits` as a body, a file or a table."""
        unknown = sorted(set(options) - set(cls.model_fields))
        if unknown:
            raise TypeError(
                f"unknown sandbox setting(s): {', '.join(unknown)}; "
                f"known: {', '.join(sorted(cls.model_fields))}"
            )
        limits = options.get("limits")
        if limits is None:
            options.pop("limits", None)
        elif isinstance(limits, str | Path):
            options["limits"] = LimitTable.from_file(limits)
        elif not isinstance(limits, LimitTable):
            options["limits"] = LimitTable.from_json(limits, source="limits")
        return cls(**options)

    @classmethod
    def from_json(cls, text: str) -> SandboxConfig:
        return cls.of(**json.loads(text))
