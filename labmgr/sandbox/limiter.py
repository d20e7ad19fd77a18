"""Enforced rate limits: token buckets per organization (and project) and model family.

A request costs one request plus its prompt tokens and completion budget; one without a
budget is admitted on its prompt and its completion is taken afterwards. A refused request
takes nothing (docs/design/sandbox.md).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.behaviour import content_text, prompt_tokens
from labmgr.sandbox.errors import APIError
from labmgr.sandbox.faults import MODEL_ENDPOINTS
from labmgr.sandbox.limit_table import LimitTable, limit_family

__all__ = ["Admission", "Demand", "RateLimiter", "demand_of"]

_LEARN_MORE = "Visit https://platform.openai.com/account/rate-limits to learn more."
LEGACY_DEFAULT_MAX_TOKENS = 16
"""`/v1/completions` generates at most 16 tokens when `max_tokens` is not given."""


def go_duration(seconds: float) -> str:
    """A duration as OpenAI writes it (Go style): ``20ms``, ``9.816s``, ``1m12.5s``, ``0s``."""
    ms = math.ceil(seconds * 1000 - 1e-6)
    if ms <= 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


@dataclass(frozen=True, slots=True)
class Demand:
    """The model a request is for and the tokens it counts against the limits."""

    model: str
    tokens: int
    budgeted: bool = True
    """False when no completion budget was given: the completion is counted afterwards."""


def _positive(body: dict[str, Any], *params: str) -> int | None:
    for param in params:
        value = body.get(param)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def demand_of(endpoint: str, body: Any) -> Demand | None:
    """The demand of a request to `endpoint`, or None if it is not a (readable) model request."""
    if endpoint not in MODEL_ENDPOINTS or not isinstance(body, dict):
        return None
    model, n = body.get("model"), _positive(body, "n") or 1
    budget: int | None
    if not isinstance(model, str):
        return None
    if endpoint == "completions":  # every prompt plus its budget for each choice
        raw = body.get("prompt")
        prompts = [p for p in (raw if isinstance(raw, list) else [raw]) if isinstance(p, str)]
        each = _positive(body, "max_tokens") or LEGACY_DEFAULT_MAX_TOKENS
        tokens = sum(prompt_tokens((("user", p),)) for p in prompts)
        return Demand(model, tokens + len(prompts) * n * each)
    if endpoint == "chat.completions":
        messages = body.get("messages")
        messages = messages if isinstance(messages, list) else []
        texts = [content_text(m.get("content")) for m in messages if isinstance(m, dict)]
        budget = _positive(body, "max_completion_tokens", "max_tokens")
        budget = budget and budget * n
    else:  # instructions and input (not a `previous_response_id`'s)
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else []
        if isinstance(raw, list):
            items = [i for i in raw if isinstance(i, dict) and i.get("type") in (None, "message")]
            texts = [content_text(item.get("content")) for item in items]
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            texts.insert(0, instructions)
        budget = _positive(body, "max_output_tokens")
    tokens = prompt_tokens(tuple(("", text) for text in texts)) if texts else 0
    return Demand(model, tokens + (budget or 0), budget is not None)


@dataclass(slots=True)
class Bucket:
    """One limit of one organization or project: up to `limit` units, refilled at
    `limit`/60 per second."""

    kind: str
    """``requests`` or ``tokens``."""
    label: str
    """How a refusal names the owner: ``organization org-…`` or ``project proj_…``."""
    limit: int
    level: float = field(init=False)
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.level = float(self.limit)

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(float(self.limit), self.level + (now - self.stamp) * self.limit / 60)
            self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until the bucket holds `amount` (`limit`: until it is full)."""
        return max(0.0, (amount - self.level) * 60 / self.limit)


@dataclass
class Admission:
    """The limiter's answer for one request: refused (with the 429) or admitted."""

    demand: Demand
    buckets: list[Bucket]
    refusal: APIError | None = None

    def debit_tokens(self, tokens: int) -> None:
        """Take tokens known only after answering (the completion of an unbudgeted request)."""
        for bucket in self.buckets:
            if bucket.kind == "tokens":
                bucket.level -= tokens

    def headers(self) -> list[tuple[bytes, bytes]]:
        """`x-ratelimit-*` for the tightest bucket of each kind."""
        out: list[tuple[bytes, bytes]] = []
        for kind in ("requests", "tokens"):
            buckets = [b for b in self.buckets if b.kind == kind]
            if buckets:
                tightest = min(buckets, key=lambda b: b.level / b.limit)
                remaining = max(0, math.floor(tightest.level))
                out.append((f"x-ratelimit-limit-{kind}".encode(), b"%d" % tightest.limit))
                out.append((f"x-ratelimit-remaining-{kind}".encode(), b"%d" % remaining))
                reset = go_duration(tightest.wait_for(tightest.limit))
                out.append((f"x-ratelimit-reset-{kind}".encode(), reset.encode()))
        return out


class RateLimiter:
    """The buckets of one limit table (a new table starts with every bucket full)."""

    def __init__(self, table: LimitTable) -> None:
        self.table = table
        self.active = not table.empty
        self._buckets: dict[tuple[str, ...], list[Bucket]] = {}
        """Per (organization or project, family) key."""

    def admit(self, account: Account, demand: Demand) -> Admission | None:
        """Admit or refuse one request; None when no limit applies to its model."""
        family = limit_family(demand.model)
        if family is None:
            return None
        org, project = account.organization, account.project
        buckets = []
        for key, label, limits in (
            (("org", org, family), f"organization {org}", self.table.organization_limits(family)),
            (
                ("project", org, project, family),
                f"project {project}",
                self.table.project_limits(project, family),
            ),
        ):
            if key not in self._buckets:
                rpm, tpm = (limits.rpm, limits.tpm) if limits else (None, None)
                self._buckets[key] = [
                    Bucket(kind, label, limit)
                    for kind, limit in (("requests", rpm), ("tokens", tpm))
                    if limit is not None
                ]
            buckets += self._buckets[key]
        if not buckets:
            return None
        now = time.monotonic()
        for bucket in buckets:
            bucket.refill(now)
        refusal = _refusal(family, buckets, demand.tokens)
        if refusal is None:
            for bucket in buckets:
                bucket.level -= 1 if bucket.kind == "requests" else demand.tokens
        return Admission(demand, buckets, refusal)


def _refusal(family: str, buckets: list[Bucket], tokens: int) -> APIError | None:
    for bucket in buckets:
        if bucket.kind == "requests" and bucket.level < 1:
            return _rate_limited(family, bucket, "RPM", 1)
    for bucket in buckets:
        if bucket.kind == "tokens" and tokens > bucket.limit:
            return APIError(
                429,
                f"Request too large for {family} in {bucket.label} on tokens per min (TPM): "
                f"Limit {bucket.limit}, Requested {tokens}. The input or output tokens must "
                f"be reduced in order to run successfully. {_LEARN_MORE}",
                type="tokens",
                code="rate_limit_exceeded",
            )
        if bucket.kind == "tokens" and bucket.level < tokens:
            return _rate_limited(family, bucket, "TPM", tokens)
    return None


def _rate_limited(family: str, bucket: Bucket, short: str, requested: int) -> APIError:
    wait_ms = max(1, math.ceil(bucket.wait_for(requested) * 1000 - 1e-6))
    used = max(0, math.ceil(bucket.limit - bucket.level - 1e-9))
    return APIError(
        429,
        f"Rate limit reached for {family} in {bucket.label} on {bucket.kind} per min ({short}): "
        f"Limit {bucket.limit}, Used {used}, Requested {requested}. "
        f"Please try again in {go_duration(wait_ms / 1000)}. {_LEARN_MORE}",
        type=bucket.kind,
        code="rate_limit_exceeded",
        headers={"retry-after-ms": str(wait_ms), "retry-after": str(math.ceil(wait_ms / 1000))},
    )
