"""An offline token estimate of a training example: GPT-style pre-split pieces charged by length,
within about ±15% of ``o200k_base`` on English prose."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

_PIECES = re.compile(r"'(?:[sdmt]|ll|ve|re)\b| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+")
_CJK = "\u2e80-\U0002ffff"
# runs that cost more than the one token their piece is charged (rare in most text)
_LONG_RUNS = re.compile(rf"[A-Za-z]{{8,}}|[{_CJK}]{{2,}}|[^\W\d_A-Za-z{_CJK}]{{4,}}|[^\s\w]{{3,}}")
_PER_MESSAGE = 4
_PER_EXAMPLE = 2


def _extra_tokens(run: str) -> int:
    first = run[0]
    if first.isascii() and first.isalpha():
        return math.ceil(len(run) / 7) - 1  # long English words split
    if first >= "\u2e80":
        return len(run) - 1  # CJK: about one token per character
    if first.isalpha():
        return math.ceil(len(run) / 3) - 1  # other alphabets: ~3 characters per token
    return math.ceil(len(run) / 2) - 1  # punctuation runs


def estimate_text_tokens(text: str) -> int:
    """Estimated tokens of `text`: one per piece, more for long runs."""
    total = len(_PIECES.findall(text))
    for run in _LONG_RUNS.findall(text):
        total += _extra_tokens(run)
    return total


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return estimate_text_tokens(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                total += estimate_text_tokens(part["text"])
            elif isinstance(part, dict) and part.get("type") == "image_url":
                total += 85  # a low-detail image tile; high detail costs more
        return total
    return 0


def estimate_messages_tokens(messages: Iterable[Any]) -> int:
    """Estimated tokens of a list of chat messages (content, names, tool calls)."""
    total = 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        total += _PER_MESSAGE + _content_tokens(message.get("content"))
        if isinstance(message.get("name"), str):
            total += estimate_text_tokens(message["name"])
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                for field in ("name", "arguments"):
                    if isinstance(function.get(field), str):
                        total += estimate_text_tokens(function[field])
    return total


def estimate_example_tokens(example: dict[str, Any]) -> int:
    """Estimated tokens of one training example, supervised or preference (DPO)."""
    total = _PER_EXAMPLE
    prompt = example.get("input")
    holder: dict[str, Any] = prompt if isinstance(prompt, dict) else example
    messages = holder.get("messages")
    if isinstance(messages, list):
        total += estimate_messages_tokens(messages)
    if holder.get("tools") is not None:
        total += estimate_text_tokens(json.dumps(holder["tools"], ensure_ascii=False))
    for key in ("preferred_output", "non_preferred_output"):
        if isinstance(example.get(key), list):
            total += estimate_messages_tokens(example[key])
    return total
