"""Typed requests and results: one `ChatRequest` per (endpoint, model, params, conversation),
whose `cache_key` is the canonical hash; samples are told apart by their index."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from json.encoder import encode_basestring as encode_text  # what `_dumps` writes for a str
from typing import Any, NamedTuple

CACHE_VERSION = 1
"""Bumped when the meaning of a cached answer changes; old entries are then not found."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """Everything that decides a chat completion's answer, except the sample index.

    Timeouts, concurrency and retry settings are deliberately absent: they never change an
    answer, so changing them re-uses the cache. `cache_key` is the sha256 of
    `canonical_json()`; the cache stores one entry per (key, sample index).
    """

    endpoint: str
    """The endpoint's identity (its base URL); never an API key."""
    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    """API parameters such as temperature, max_tokens, logprobs, top_logprobs, logit_bias."""
    cache_key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cache_key", _digest(self.canonical_json()))

    def canonical_json(self) -> str:
        """The one serialisation the cache key is computed from: sorted keys, no spaces."""
        return _canonical_json(
            _dumps(self.endpoint.rstrip("/")),
            _dumps(self.messages),
            _dumps(self.model),
            _dumps(self.params),
        )

    def body_json(self, n: int = 1) -> bytes:
        """The JSON body to send, serialised once here (the hot path skips the SDK's copy)."""
        return json.dumps(self.body(n), separators=(",", ":"), ensure_ascii=False).encode()

    def body(self, n: int = 1) -> dict[str, Any]:
        """The JSON body to send, asking for `n` choices."""
        body: dict[str, Any] = {"model": self.model, "messages": self.messages, **self.params}
        if n != 1:
            body["n"] = n
        return body


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _canonical_json(endpoint: str, messages: str, model: str, params: str) -> str:
    """`{"v", "endpoint", "model", "messages", "params"}` with sorted keys, from the JSON of
    each part: byte for byte what `json.dumps(…, sort_keys=True)` of the whole would give."""
    return (
        f'{{"endpoint":{endpoint},"messages":{messages},"model":{model},'
        f'"params":{params},"v":{CACHE_VERSION}}}'
    )


def message_json(role: str, content_json: str) -> str:
    """A `{"role", "content"}` message as the cache key writes it, from its content's JSON
    string (`encode_text(content)`)."""
    return f'{{"content":{content_json},"role":{encode_text(role)}}}'


def _plain_messages_json(messages: list[dict[str, Any]]) -> str | None:
    """`_dumps(messages)` for messages that are each exactly a text `content` and a `role`
    (a judge's prompts: one serialisation per prompt, so the general encoder's set-up is
    most of its cost); None for any other shape."""
    parts = []
    for message in messages:
        if type(message) is not dict or len(message) != 2:
            return None
        content, role = message.get("content"), message.get("role")
        if type(content) is not str or type(role) is not str:
            return None
        parts.append(message_json(role, encode_text(content)))
    return "[" + ",".join(parts) + "]"


def _digest(canonical: str) -> str:
    return hashlib.sha256(canonical.encode()).hexdigest()


class RequestBatch:
    """Builds many requests that share conversations, models and params (a question asked of
    many models), serialising each shared part once instead of once per request.

    Dicts and lists are remembered by identity for the batch's lifetime (the batch holds a
    reference, so an id is never reused): do not mutate them between calls.
    """

    def __init__(self) -> None:
        self._messages: dict[int, tuple[Any, str]] = {}
        self._suffixes: dict[tuple[str, str, int], tuple[Any, str, str]] = {}

    def request(
        self,
        endpoint: str,
        model: str,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        messages_json: str | None = None,
    ) -> ChatRequest:
        """The same `ChatRequest` (and cache key) as `ChatRequest(endpoint, model, …)`.

        `messages_json`, when the caller has it, is `messages` as the cache key writes them
        (`message_json` of each, in a JSON list); it is used as it is, not checked."""
        if messages_json is not None:
            serialised = messages_json
        else:
            known = self._messages.get(id(messages))
            if known is None:
                text = _plain_messages_json(messages)
                known = self._messages[id(messages)] = (messages, text or _dumps(messages))
            serialised = known[1]
        around = self._suffixes.get((endpoint, model, id(params)))
        if around is None:
            # JSON escapes control characters, so a raw NUL can stand in for the messages.
            head, tail = _canonical_json(
                _dumps(endpoint.rstrip("/")), "\x00", _dumps(model), _dumps(params)
            ).split("\x00")
            around = self._suffixes[(endpoint, model, id(params))] = (params, head, tail)
        request = object.__new__(ChatRequest)  # the fields below, without re-hashing
        set_field = object.__setattr__
        set_field(request, "endpoint", endpoint)
        set_field(request, "model", model)
        set_field(request, "messages", messages)
        set_field(request, "params", params)
        set_field(request, "cache_key", _digest(around[1] + serialised + around[2]))
        return request


class SampleResult(NamedTuple):
    """One sample (one choice) as cached; usage is this sample's share of its request.

    A tuple, so that a bulk cache read builds it straight from a database row."""

    content: str | None
    logprobs_json: str | None
    """JSON `[[token, logprob], …]`: the top logprobs of the first generated token."""
    finish_reason: str | None
    prompt_tokens: float
    completion_tokens: float
    """Visible and reasoning tokens together, as the API bills them."""
    reasoning_tokens: float | None = None
    """Of `completion_tokens`, those spent on hidden reasoning (None: the server did not
    say, as chat models and other providers often do not)."""

    def top_logprobs(self) -> list[tuple[str, float]]:
        if not self.logprobs_json:
            return []
        return [(str(token), float(logprob)) for token, logprob in json.loads(self.logprobs_json)]
