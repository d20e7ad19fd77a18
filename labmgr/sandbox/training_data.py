"""Reading a fine-tuning file the way the real API's validation step does."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from labmgr.sandbox.behaviour import content_text, count_tokens

__all__ = ["MIN_TRAINING_EXAMPLES", "TrainingData", "TrainingFileError", "parse_training_file"]

MIN_TRAINING_EXAMPLES = 10
_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


class TrainingFileError(ValueError):
    """A training or validation file the job cannot use; the message names the line."""


@dataclass(frozen=True)
class TrainingData:
    """Parsed examples of one file and the tokens one epoch over them costs."""

    examples: list[dict[str, Any]]
    tokens: int


def parse_training_file(
    content: bytes, *, method: str, min_examples: int = MIN_TRAINING_EXAMPLES
) -> TrainingData:
    """Parse JSONL chat (supervised), preference (dpo) or prompt (reinforcement) examples,
    or raise TrainingFileError."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrainingFileError(f"The file is not UTF-8 text (byte {exc.start}).") from exc
    examples: list[dict[str, Any]] = []
    tokens = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            example = json.loads(line)
        except ValueError:
            raise TrainingFileError(f"Line {number} is not valid JSON.") from None
        if not isinstance(example, dict):
            raise TrainingFileError(f"Line {number} is not a JSON object.")
        if method == "dpo":
            tokens += _check_preference(example, number)
        elif method == "reinforcement":
            tokens += _check_prompt(example, number)
        else:
            tokens += _check_messages(example.get("messages"), number, "messages", need_reply=True)
        examples.append(example)
    if len(examples) < min_examples:
        raise TrainingFileError(
            f"The file has {len(examples)} example(s), but must have at least {min_examples} "
            "examples."
        )
    return TrainingData(examples, tokens)


def _check_messages(messages: Any, number: int, field: str, *, need_reply: bool) -> int:
    if messages is None:
        raise TrainingFileError(f"Line {number} is missing the `{field}` field.")
    if not isinstance(messages, list) or not messages:
        raise TrainingFileError(f"Line {number}: `{field}` must be a non-empty list of messages.")
    tokens = 0
    has_reply = False
    for index, message in enumerate(messages):
        where = f"Line {number}, {field}[{index}]"
        if not isinstance(message, dict):
            raise TrainingFileError(f"{where} is not a JSON object.")
        role = message.get("role")
        if role not in _ROLES:
            raise TrainingFileError(f"{where} has an invalid role {role!r}.")
        content = message.get("content")
        if content is None and not message.get("tool_calls"):
            raise TrainingFileError(f"{where} is missing `content`.")
        tokens += count_tokens(content_text(content))
        has_reply = has_reply or role == "assistant"
    if need_reply and not has_reply:
        raise TrainingFileError(f"Line {number} has no assistant message to learn from.")
    return tokens


def _check_preference(example: dict[str, Any], number: int) -> int:
    prompt = example.get("input")
    if not isinstance(prompt, dict):
        raise TrainingFileError(f"Line {number} is missing the `input` object of a DPO example.")
    tokens = _check_messages(prompt.get("messages"), number, "input.messages", need_reply=False)
    for field in ("preferred_output", "non_preferred_output"):
        tokens += _check_messages(example.get(field), number, field, need_reply=True)
    return tokens


def _check_prompt(example: dict[str, Any], number: int) -> int:
    """A reinforcement example: messages the model answers (not ending with its own reply);
    other keys are fields the grader reads."""
    messages = example.get("messages")
    tokens = _check_messages(messages, number, "messages", need_reply=False)
    if isinstance(messages, list) and messages[-1].get("role") == "assistant":
        raise TrainingFileError(
            f"Line {number}: the last message must not be the assistant's; in reinforcement "
            "fine-tuning the model writes the answer."
        )
    return tokens
