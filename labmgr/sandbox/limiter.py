"""What a model request costs, and enforced rate limits: token buckets per organization
(and project) and model family.

A request costs one request plus its prompt tokens and requested completion budget
(`max_completion_tokens` or `max_tokens` times `n`; a response's `max_output_tokens`); one
without a budget is admitted on its prompt and its completion is taken afterwards. The same
count decides what a batch enqueues. A bucket holds at most its per-minute limit and
refills at limit/60 per second. A request is admitted when every bucket that applies holds
it, and takes it out; a refused request takes nothing. `x-ratelimit-*` report the emptiest
bucket.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.behaviour import content_text, prompt_tokens
from labmgr.sandbox.errors import APIError
from labmgr.sandbox.limit_table import LimitTable, ModelLimits, limit_family

__all__ = ["METERS", "Admission", "Demand", "RateLimiter", "demand_of", "go_duration"]

_LEARN_MORE = "Visit https://platform.openai.com/account/rate-limits to learn more."


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
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


LEGACY_DEFAULT_MAX_TOKENS = 16
"""`/v1/completions` generates at most 16 tokens when `max_tokens` is not given."""


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


def _demand(model: str, prompt: list[str], budget: int | None) -> Demand:
    tokens = prompt_tokens(tuple(("", text) for text in prompt)) if prompt else 0
    return Demand(model, tokens + (budget or 0), budget is not None)


def chat_demand(body: dict[str, Any], model: str) -> Demand:
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    texts = [content_text(m.get("content")) for m in messages if isinstance(m, dict)]
    budget = _positive(body, "max_completion_tokens", "max_tokens")
    return _demand(model, texts, budget and budget * (_positive(body, "n") or 1))


def completion_demand(body: dict[str, Any], model: str) -> Demand:
    """Every prompt plus its budget (16 by default) for each choice."""
    prompt = body.get("prompt")
    prompts = [p for p in (prompt if isinstance(prompt, list) else [prompt]) if isinstance(p, str)]
    budget = _positive(body, "max_tokens") or LEGACY_DEFAULT_MAX_TOKENS
    tokens = sum(prompt_tokens((("user", p),)) for p in prompts)
    return Demand(model, tokens + len(prompts) * (_positive(body, "n") or 1) * budget)


def responses_demand(body: dict[str, Any], model: str) -> Demand:
    """Instructions and input plus `max_output_tokens` (not a `previous_response_id`'s)."""
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else []
    if isinstance(raw, list):
        items = (i for i in raw if isinstance(i, dict) and i.get("type", "message") == "message")
        texts = [content_text(item.get("content")) for item in items]
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        texts.insert(0, instructions)
    return _demand(model, texts, _positive(body, "max_output_tokens"))


METERS: dict[str, Callable[[dict[str, Any], str], Demand]] = {
    "chat.completions": chat_demand,
    "completions": completion_demand,
    "responses.create": responses_demand,
}
"""Stats name of a model endpoint → how to read its body's demand."""


def demand_of(endpoint: str, body: Any) -> Demand | None:
    """The demand of a request to `endpoint`, or None if it is not a (readable) model request."""
    meter = METERS.get(endpoint)
    if meter is None or not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return None
    return meter(body, body["model"])


class Bucket:
    """One limit: holds up to `limit` units, refilled at `limit`/60 per second."""

    __slots__ = ("level", "limit", "rate", "stamp")

    def __init__(self, limit: int, now: float) -> None:
        self.limit = limit
        self.rate = limit / 60.0
        self.level = float(limit)
        self.stamp = now

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(float(self.limit), self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until the bucket holds `amount` (`limit`: until it is full)."""
        return max(0.0, (amount - self.level) / self.rate)


@dataclass
class _Scope:
    """The buckets of one organization or project for one model family."""

    label: str
    """How the refusal names it: ``organization org-…`` or ``project proj_…``."""
    requests: Bucket | None
    tokens: Bucket | None

    def buckets(self) -> list[Bucket]:
        return [b for b in (self.requests, self.tokens) if b is not None]


@dataclass
class Admission:
    """The limiter's answer for one request: refused (with the 429) or admitted."""

    demand: Demand
    family: str
    scopes: list[_Scope]
    refusal: APIError | None = None

    def debit_tokens(self, tokens: int) -> None:
        """Take tokens known only after answering (the completion of an unbudgeted request)."""
        for scope in self.scopes:
            if scope.tokens is not None:
                scope.tokens.level -= tokens

    def headers(self) -> list[tuple[bytes, bytes]]:
        """`x-ratelimit-*` for the tightest bucket of each dimension."""
        out: list[tuple[bytes, bytes]] = []
        for kind in ("requests", "tokens"):
            buckets = [getattr(s, kind) for s in self.scopes if getattr(s, kind) is not None]
            if not buckets:
                continue
            tightest = min(buckets, key=lambda b: b.level / b.limit)
            remaining = max(0, math.floor(tightest.level))
            reset = go_duration(tightest.wait_for(tightest.limit))
            for name, value in (("limit", tightest.limit), ("remaining", remaining)):
                out.append((f"x-ratelimit-{name}-{kind}".encode(), b"%d" % value))
            out.append((f"x-ratelimit-reset-{kind}".encode(), reset.encode()))
        return out


class RateLimiter:
    """The buckets of one limit table (a new table starts with every bucket full)."""

    def __init__(self, table: LimitTable) -> None:
        self.table = table
        self.active = not table.empty
        self._buckets: dict[tuple[str, ...], _Scope | None] = {}
        """Per (organization or project, family) key; None where no limit applies."""

    def admit(self, account: Account, demand: Demand) -> Admission | None:
        """Admit or refuse one request; None when no limit applies to its model."""
        family = limit_family(demand.model)
        if family is None:
            return None
        scopes = self._scopes(account, family)
        if not scopes:
            return None
        now = time.monotonic()
        for scope in scopes:
            for bucket in scope.buckets():
                bucket.refill(now)
        admission = Admission(demand, family, scopes)
        admission.refusal = _refusal(family, scopes, demand.tokens)
        if admission.refusal is None:
            for scope in scopes:
                if scope.requests is not None:
                    scope.requests.level -= 1
                if scope.tokens is not None:
                    scope.tokens.level -= demand.tokens
        return admission

    def _scopes(self, account: Account, family: str) -> list[_Scope]:
        org, project = account.organization, account.project
        keys = (
            (("org", org, family), f"organization {org}"),
            (("project", org, project, family), f"project {project}"),
        )
        scopes = []
        for key, label in keys:
            if key not in self._buckets:
                if key[0] == "org":
                    limits = self.table.organization_limits(family)
                else:
                    limits = self.table.project_limits(project, family)
                self._buckets[key] = _make(label, limits)
            scope = self._buckets[key]
            if scope is not None:
                scopes.append(scope)
        return scopes


def _make(label: str, limits: ModelLimits | None) -> _Scope | None:
    if limits is None or (limits.rpm is None and limits.tpm is None):
        return None
    now = time.monotonic()
    requests = Bucket(limits.rpm, now) if limits.rpm is not None else None
    return _Scope(label, requests, Bucket(limits.tpm, now) if limits.tpm is not None else None)


def _refusal(family: str, scopes: list[_Scope], tokens: int) -> APIError | None:
    for scope in scopes:
        bucket = scope.requests
        if bucket is not None and bucket.level < 1:
            return _rate_limited(family, scope.label, "requests", "RPM", bucket, 1)
    for scope in scopes:
        bucket = scope.tokens
        if bucket is None:
            continue
        if tokens > bucket.limit:
            return APIError(
                429,
                f"Request too large for {family} in {scope.label} on tokens per min (TPM): "
                f"Limit {bucket.limit}, Requested {tokens}. The input or output tokens must "
                f"be reduced in order to run successfully. {_LEARN_MORE}",
                type="tokens",
                code="rate_limit_exceeded",
            )
        if bucket.level < tokens:
            return _rate_limited(family, scope.label, "tokens", "TPM", bucket, tokens)
    return None


def _rate_limited(
    family: str, label: str, kind: str, short: str, bucket: Bucket, requested: int
) -> APIError:
    wait_ms = max(1, math.ceil(bucket.wait_for(requested) * 1000 - 1e-6))
    used = max(0, math.ceil(bucket.limit - bucket.level - 1e-9))
    return APIError(
        429,
        f"Rate limit reached for {family} in {label} on {kind} per min ({short}): "
        f"Limit {bucket.limit}, Used {used}, Requested {requested}. "
        f"Please try again in {go_duration(wait_ms / 1000)}. {_LEARN_MORE}",
        type=kind,
        code="rate_limit_exceeded",
        headers={"retry-after-ms": str(wait_ms), "retry-after": str(math.ceil(wait_ms / 1000))},
    )
