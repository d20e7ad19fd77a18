"""Typed requests and results: one `ChatRequest` per (endpoint, model, params, conversation),
whose `cache_key` is the canonical hash; samples are told apart by their index."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

__all__ = ["CACHE_VERSION", "ChatRequest", "SampleResult"]

CACHE_VERSION = 1
"""Bumped when the meaning of a cached answer changes; old entries are then not found."""


class ChatRequest(BaseModel):
    """Everything that decides a chat completion's answer, except the sample index.

    Timeouts, concurrency and retry settings are deliberately absent: they never change an
    answer, so changing them re-uses the cache.
    """

    model_config = ConfigDict(frozen=True)

    endpoint: str
    """The endpoint's identity (its base URL); never an API key."""
    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    """API parameters such as temperature, max_tokens, logprobs, top_logprobs, logit_bias."""

    _cache_key: str = PrivateAttr(default="")

    def canonical_json(self) -> str:
        """The one serialisation the cache key is computed from."""
        return json.dumps(
            {
                "v": CACHE_VERSION,
                "endpoint": self.endpoint.rstrip("/"),
                "model": self.model,
                "messages": self.messages,
                "params": self.params,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    @property
    def cache_key(self) -> str:
        """sha256 of the canonical JSON; the cache stores one entry per (key, sample index)."""
        if not self._cache_key:
            digest = hashlib.sha256(self.canonical_json().encode()).hexdigest()
            object.__setattr__(self, "_cache_key", digest)
        return self._cache_key

    def body_json(self, n: int = 1) -> bytes:
        """The JSON body to send, serialised once here (the hot path skips the SDK's copy)."""
        return json.dumps(self.body(n), separators=(",", ":"), ensure_ascii=False).encode()

    def body(self, n: int = 1) -> dict[str, Any]:
        """The JSON body to send, asking for `n` choices."""
        body: dict[str, Any] = {"model": self.model, "messages": self.messages, **self.params}
        if n != 1:
            body["n"] = n
        return body


@dataclass(slots=True)
class SampleResult:
    """One sample (one choice) as cached; usage is this sample's share of its request."""

    content: str | None
    logprobs_json: str | None
    """JSON `[[token, logprob], …]`: the top logprobs of the first generated token."""
    finish_reason: str | None
    prompt_tokens: float
    completion_tokens: float

    def top_logprobs(self) -> list[tuple[str, float]]:
        if not self.logprobs_json:
            return []
        return [(str(token), float(logprob)) for token, logprob in json.loads(self.logprobs_json)]
