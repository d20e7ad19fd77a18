"""Injected latency and failures: what `POST /sandbox/faults` configures."""

from __future__ import annotations

import random
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError

from labmgr.sandbox.errors import STRICT, bad_request, problem

MODEL_ENDPOINTS = ("chat.completions", "completions", "responses.create")
"""Stats names of the model endpoints: what faults apply to by default and limits meter."""


NonNegative = Annotated[float, Field(ge=0)]
Rate = Annotated[float, Field(ge=0, le=1)]
Count = Annotated[int | None, Field(ge=0)]


class Faults(BaseModel):
    """Latency for every `/v1` request; random failures for the endpoints in `endpoints`."""

    model_config = STRICT

    latency_ms: NonNegative = 0.0
    jitter_ms: NonNegative = 0.0
    rate_429: Rate = 0.0
    rate_500: Rate = 0.0
    rate_timeout: Rate = 0.0
    rate_drop: Rate = 0.0
    retry_after_ms: NonNegative = 20.0
    """The `retry-after-ms` header on injected 429s (small, so retrying clients stay fast)."""
    daily_job_limit: Count = None
    """Fine-tuning jobs an organization may create per rolling 24 h (None: unlimited)."""
    quota_requests: Count = None
    """Model requests (to `endpoints`) left before the credits run out, counting down; at 0
    they answer 429 `insufficient_quota` (None: unlimited)."""
    timeout_hold_max_s: NonNegative = 30.0
    """An injected timeout holds the response for the client's read timeout + 1 s, at most this."""
    endpoints: list[str] = Field(default_factory=lambda: list(MODEL_ENDPOINTS))
    """Endpoint names (as in `/sandbox/stats`) that 429/500/timeout/drop faults apply to."""
    first_attempt_only: bool = False
    """Inject failures only into first attempts (`x-stainless-retry-count: 0`), so retries pass."""
    batch_line_error_rate: Rate = 0.0
    """Share of the lines of batches created from now on that fail with a 500 in the error file."""
    batch_window_s: Annotated[float | None, Field(gt=0)] = None
    """How long the `24h` completion window of batches created from now on lasts, in seconds
    (None: 24 h). Shorter than the batch takes makes it expire."""

    def updated(self, changes: Any) -> Faults:
        """A copy with `changes` (a JSON object from `POST /sandbox/faults`) applied."""
        if not isinstance(changes, dict):
            raise bad_request("The faults body must be a JSON object.")
        try:
            return Faults.model_validate(self.model_dump() | changes)
        except ValidationError as exc:
            param = str(exc.errors()[0]["loc"][0])
            raise bad_request(problem(exc, "POST /sandbox/faults", Faults), param=param) from None

    def delay_s(self) -> float:
        jitter = random.uniform(-self.jitter_ms, self.jitter_ms) if self.jitter_ms else 0.0
        return max(0.0, self.latency_ms + jitter) / 1000.0

    def spend_quota(self, endpoint: str) -> bool:
        """Count one model request against `quota_requests`; False when none is left."""
        if self.quota_requests is None or endpoint not in self.endpoints:
            return True
        if self.quota_requests == 0:
            return False
        self.quota_requests -= 1
        return True

    def draw(self, endpoint: str, retry_count: str | None) -> str | None:
        """Which failure (``429``, ``500``, ``timeout``, ``drop``) to inject now, if any."""
        rates = (self.rate_429, self.rate_500, self.rate_timeout, self.rate_drop)
        if not any(rates) or endpoint not in self.endpoints:
            return None
        if self.first_attempt_only and retry_count not in (None, "0"):
            return None
        roll = random.random()
        for name, rate in zip(("429", "500", "timeout", "drop"), rates, strict=True):
            if roll < rate:
                return name
            roll -= rate
        return None
