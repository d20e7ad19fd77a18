"""Rate limits: the table as configured, and the token buckets that enforce it.

The body of `POST /sandbox/limits` and of a `--limits` file (JSON or TOML)::

    {"gpt-4.1-mini": {"rpm": 3000, "tpm": 2000000, "batch_queue_tokens": 20000000},
     "*": {"rpm": 500, "tpm": 200000},
     "projects": {"proj_alpha": {"gpt-4.1-mini": {"rpm": 100}}}}

Snapshots and fine-tunes count under their alias's family; buckets are kept per
organization (and project) and family (docs/design/sandbox.md).
"""

from __future__ import annotations

import json
import math
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.behaviour import CATALOGUE, content_text, prompt_tokens
from labmgr.sandbox.errors import STRICT, APIError, SandboxError, read
from labmgr.sandbox.faults import MODEL_ENDPOINTS

DEFAULT_KEY = "*"
PROJECTS_KEY = "projects"
Limit = Annotated[int | None, Field(ge=1)]


class LimitsError(SandboxError, ValueError):
    """A limits body or file that cannot be used (the message names the source and the key)."""


def limit_family(model: str) -> str | None:
    """The alias whose limits `model` (a snapshot, a fine-tune) counts under, if any."""
    if model.startswith("ft:"):
        model = model.split(":")[1] if model.count(":") >= 2 else ""
    card = CATALOGUE.get(model)
    return None if card is None else card.snapshot_of or card.id


class ProjectLimits(BaseModel):
    """A project's own caps on one model family; None leaves that dimension uncapped."""

    model_config = STRICT | ConfigDict(frozen=True)

    rpm: Limit = None
    """Requests per minute."""
    tpm: Limit = None
    """Tokens per minute: prompt tokens plus the requested completion budget."""

    @model_validator(mode="after")
    def _not_empty(self) -> ProjectLimits:
        if not self.model_fields_set:
            raise ValueError(f"give at least one of {', '.join(type(self).model_fields)}")
        return self


class ModelLimits(ProjectLimits):
    """One model family's limits for an organization."""

    batch_queue_tokens: Limit = None
    """Tokens the organization may have enqueued in unfinished batches for this family."""


@dataclass(frozen=True)
class LimitTable:
    """The limits a sandbox enforces (empty: none, the sandbox's default)."""

    models: Mapping[str, ModelLimits] = field(default_factory=dict)
    """Per organization: model family (or ``*``) → limits."""
    projects: Mapping[str, Mapping[str, ProjectLimits]] = field(default_factory=dict)
    """Per project id: model family (or ``*``) → that project's own caps."""

    def limits(self, family: str, project: str | None = None) -> ProjectLimits | None:
        """A family's limits for the organization, or `project`'s own caps."""
        table = self.models if project is None else self.projects.get(project, {})
        return table.get(family) or table.get(DEFAULT_KEY)

    def queue_tokens(self, family: str) -> int | None:
        """The organization's cap on `family`'s tokens enqueued in batches, if any."""
        return getattr(self.limits(family), "batch_queue_tokens", None)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = _dump(self.models)
        if self.projects:
            body[PROJECTS_KEY] = {project: _dump(t) for project, t in self.projects.items()}
        return body

    @classmethod
    def from_json(cls, body: Any, *, source: str) -> LimitTable:
        if not isinstance(body, Mapping):
            raise LimitsError(
                f"{source}: expected an object mapping model names to limits, "
                'e.g. {"gpt-4.1-mini": {"rpm": 3000, "tpm": 2000000}}'
            )
        models = _model_table(body, source, ModelLimits, skip=PROJECTS_KEY)
        projects: dict[str, dict[str, ProjectLimits]] = {}
        raw_projects = body.get(PROJECTS_KEY, {})
        if not isinstance(raw_projects, Mapping):
            raise LimitsError(f"{source}: `projects` must map project ids to model limits")
        for project, table in raw_projects.items():
            where = f"{source}, project {project}"
            if not isinstance(table, Mapping):
                raise LimitsError(f"{where}: expected an object mapping model names to limits")
            projects[str(project)] = _model_table(table, where, ProjectLimits)
        return cls(models, projects)

    @classmethod
    def from_file(cls, path: str | Path) -> LimitTable:
        """Read a JSON or TOML limits file (by suffix; other names are tried as both)."""
        path = Path(path)
        try:
            text = path.read_bytes().decode("utf-8")
        except OSError as exc:
            raise LimitsError(f"cannot read limits file {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise LimitsError(f"limits file {path} is not UTF-8 text") from None
        return cls.from_json(_parse_text(path, text), source=f"limits file {path}")


def _dump(table: Mapping[str, ProjectLimits]) -> dict[str, Any]:
    return {key: limits.model_dump(exclude_none=True) for key, limits in table.items()}


def _parse_text(path: Path, text: str) -> Any:
    parsers = [("JSON", json.loads), ("TOML", tomllib.loads)]
    if path.suffix.lower() in (".json", ".toml"):
        parsers = [p for p in parsers if p[0] == path.suffix[1:].upper()]
    for name, parse in parsers:
        try:
            return parse(text)
        except ValueError as exc:  # TOMLDecodeError is a ValueError
            if len(parsers) == 1:
                raise LimitsError(f"limits file {path} is not valid {name}: {exc}") from None
    raise LimitsError(
        f"limits file {path} is neither valid JSON nor valid TOML "
        "(name it .json or .toml to see the parser's message)"
    )


def _model_table(
    body: Mapping[str, Any], source: str, model: type[Any], skip: str | None = None
) -> dict[str, Any]:
    table: dict[str, Any] = {}
    named: dict[str, str] = {}
    for key, entry in body.items():
        if key == skip:
            continue
        family = DEFAULT_KEY if key == DEFAULT_KEY else limit_family(str(key))
        if family is None or str(key).startswith("ft:"):
            nested = isinstance(entry, Mapping) and any(
                isinstance(v, Mapping) for v in entry.values()
            )
            hint = ' (in TOML, quote a name with dots: ["gpt-4.1-mini"])' if nested else ""
            raise LimitsError(
                f"{source}: unknown model {key!r}{hint}; name a catalogue model (its "
                "snapshots and fine-tunes count under it) or '*' for every other model"
            )
        if family in named:
            raise LimitsError(
                f"{source}: {named[family]!r} and {key!r} both set the limits of {family}; keep one"
            )
        named[family] = str(key)
        table[family] = read(model, entry, f"{source}, model {key}", LimitsError)
    return table


_LEARN_MORE = "Visit https://platform.openai.com/account/rate-limits to learn more."
LEGACY_DEFAULT_MAX_TOKENS = 16


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
    """None if it is not a (readable) model request."""
    if endpoint not in MODEL_ENDPOINTS or not isinstance(body, dict):
        return None
    model, n = body.get("model"), _positive(body, "n") or 1
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
    """``organization org-…`` or ``project proj_…``."""
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
        return max(0.0, (amount - self.level) * 60 / self.limit)


@dataclass
class Admission:
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
        self.active = bool(table.models or table.projects)
        self._buckets: dict[tuple[str, str | None, str], list[Bucket]] = {}

    def admit(self, account: Account, demand: Demand) -> Admission | None:
        """Admit or refuse one request; None when no limit applies to its model."""
        family = limit_family(demand.model)
        if family is None:
            return None
        org, project = account.organization, account.project
        buckets = []
        for owner, label in ((None, f"organization {org}"), (project, f"project {project}")):
            key = (org, owner, family)
            if key not in self._buckets:
                limits = self.table.limits(family, owner)
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
