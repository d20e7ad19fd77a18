"""A chat completion's choices as cached samples (choice *i* is the request's *i*-th sample,
usage shared equally), for the synchronous runner and batch output alike."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.cache import SampleResult


def _first_token_logprobs(choice: dict[str, Any]) -> str | None:
    logprobs = choice.get("logprobs") or {}
    content = logprobs.get("content") or []
    if not content:
        return None
    top = content[0].get("top_logprobs") or []
    return json.dumps([[t["token"], t["logprob"]] for t in top], separators=(",", ":"))


@dataclass
class ReadChoices:
    """The samples a completion gave, and why the others are missing."""

    stored: list[tuple[int, SampleResult]] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    reasoning_tokens: float = 0.0


def read_choices(data: dict[str, Any], sample_ixs: Sequence[int], logprobs: bool) -> ReadChoices:
    """The samples of a chat completion body (KeyError, TypeError, ValueError or AttributeError
    when malformed); a filtered choice or missing logprobs is an error, never an answer."""
    choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
    usage = data.get("usage") or {}
    read = ReadChoices(
        prompt_tokens=float(usage.get("prompt_tokens") or 0),
        completion_tokens=float(usage.get("completion_tokens") or 0),
    )
    share = max(1, len(choices))
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    reasoning_share = None if reasoning is None else float(reasoning) / share
    read.reasoning_tokens = float(reasoning or 0)
    for ix, choice in zip(sample_ixs, choices, strict=False):
        finish = choice.get("finish_reason")
        message = choice.get("message") or {}
        top = _first_token_logprobs(choice) if logprobs else None
        if finish == "content_filter":
            read.errors[ix] = "content_filter: the answer was filtered"
            continue
        if logprobs and top is None:
            read.errors[ix] = "the response has no logprobs"
            continue
        content = message.get("content")
        if content is None and message.get("refusal"):
            finish = "refusal"
        read.stored.append(
            (
                ix,
                SampleResult(
                    content,
                    top,
                    finish,
                    read.prompt_tokens / share,
                    read.completion_tokens / share,
                    reasoning_share,
                ),
            )
        )
    if len(choices) < len(sample_ixs):
        for ix in sample_ixs[len(choices) :]:
            read.errors[ix] = f"the server returned {len(choices)} of {len(sample_ixs)} choices"
    return read
