"""Injected latency and failures: what `POST /sandbox/faults` configures."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from labmgr.sandbox.errors import bad_request

MODEL_ENDPOINTS = ("chat.completions", "completions", "responses.create")
"""Stats names of the model endpoints: what faults apply to by default and limits meter."""


@dataclass
class Faults:
    """Latency for every `/v1` request; random failures for the endpoints in `endpoints`."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_timeout: float = 0.0
    rate_drop: float = 0.0
    retry_after_ms: float = 20.0
    """The `retry-after-ms` header on injected 429s (small, so retrying clients stay fast)."""
    daily_job_limit: int | None = None
    """Fine-tuning jobs an organization may create per rolling 24 h (None: unlimited)."""
    quota_requests: int | None = None
    """Model requests (to `endpoints`) left before the credits run out, counting down; at 0
    they answer 429 `insufficient_quota` (None: unlimited)."""
    timeout_hold_max_s: float = 30.0
    """An injected timeout holds the response for the client's read timeout + 1 s, at most this."""
    endpoints: list[str] = field(default_factory=lambda: list(MODEL_ENDPOINTS))
    """Endpoint names (as in `/sandbox/stats`) that 429/500/timeout/drop faults apply to."""
    first_attempt_only: bool = False
    """Inject failures only into first attempts (`x-stainless-retry-count: 0`), so retries pass."""
    batch_line_error_rate: float = 0.0
    """Share of the lines of batches created from now on that fail with a 500 in the error file."""
    batch_window_s: float | None = None
    """How long the `24h` completion window of batches created from now on lasts, in seconds
    (None: 24 h). Shorter than the batch takes makes it expire."""

    def updated(self, changes: Any) -> Faults:
        """A copy with `changes` (a JSON object from `POST /sandbox/faults`) applied."""
        if not isinstance(changes, dict):
            raise bad_request("The faults body must be a JSON object.")
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise bad_request(
                f"Unknown fault setting(s): {', '.join(unknown)}. "
                f"Known: {', '.join(sorted(known))}."
            )
        return replace(self, **{name: _check(name, value) for name, value in changes.items()})

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

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _check(name: str, value: Any) -> Any:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if name == "first_attempt_only":
        ok, rule = isinstance(value, bool), "true or false"
    elif name == "endpoints":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        rule = "a list of endpoint names"
    elif name == "batch_window_s":
        ok, rule = value is None or (number and value > 0), "a positive number or null"
    elif name in ("daily_job_limit", "quota_requests"):
        ok = value is None or (number and isinstance(value, int) and value >= 0)
        rule = "a non-negative integer or null"
    else:
        ok, rule = number and value >= 0, "a non-negative number"
        if ok and (name.startswith("rate_") or name.endswith("_rate")) and value > 1:
            raise bad_request(f"`{name}` is a probability between 0 and 1.", param=name)
    if not ok:
        raise bad_request(f"`{name}` must be {rule}.", param=name)
    return float(value) if number and name not in ("daily_job_limit", "quota_requests") else value
