"""The `input` of a `/v1/responses` body: its messages as the simulator reads them and as
`input_items.list` shows them, and the parameter errors the Responses checks share.

An input is a string (one user message) or a list of message items (roles user, system,
developer, assistant; content a string or text parts). Replayed reasoning items are
skipped; image, file and audio parts are accepted but not read; tool items are refused,
as the sandbox runs no tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labmgr.sandbox.behaviour import invalid_type
from labmgr.sandbox.errors import APIError

__all__ = [
    "Messages",
    "bad_parameter",
    "invalid_value",
    "missing_parameter",
    "read_input",
    "wrong_type",
]

Messages = tuple[tuple[str, str], ...]
"""(role, text) per message."""

INPUT_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "refusal")
OTHER_PARTS = ("input_image", "input_file", "input_audio")
"""Content parts accepted but not read (the simulator answers the text)."""


def bad_parameter(message: str, param: str | None, code: str | None = None) -> APIError:
    """A 400 naming `param`."""
    return APIError(400, message, param=param, code=code)


def missing_parameter(param: str) -> APIError:
    """The real API's 400 for a required parameter that was not sent."""
    return bad_parameter(
        f"Missing required parameter: '{param}'.", param, "missing_required_parameter"
    )


def invalid_value(value: Any, allowed: tuple[str, ...], param: str) -> APIError:
    """The real API's 400 for a value outside `allowed`."""
    quoted = [f"'{v}'" for v in allowed]
    listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    return bad_parameter(
        f"Invalid value: '{value}'. Supported values are: {listed}.", param, "invalid_value"
    )


def wrong_type(param: str, expected: str, value: Any) -> APIError:
    """The real API's 400 for a parameter of the wrong JSON type."""
    error = invalid_type(param, expected, value)
    return bad_parameter(error.message, error.param, error.code)


def _content_text(content: Any, where: str) -> tuple[str, list[dict[str, Any]]]:
    """A message's text and its text parts (as `input_items.list` shows them)."""
    if isinstance(content, str):
        return content, [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        raise wrong_type(f"{where}.content", "one of a string or array of objects", content)
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        param = f"{where}.content[{j}]"
        if not isinstance(part, Mapping):
            raise wrong_type(param, "an object", part)
        kind = part.get("type")
        if kind is None:
            raise missing_parameter(f"{param}.type")
        if kind in TEXT_PARTS:
            key = "refusal" if kind == "refusal" else "text"
            text = part.get(key)
            if not isinstance(text, str):
                raise wrong_type(f"{param}.{key}", "a string", text)
            texts.append(text)
            parts.append({"type": kind, key: text})
        elif kind not in OTHER_PARTS:
            raise invalid_value(kind, TEXT_PARTS + OTHER_PARTS, f"{param}.type")
    return "".join(texts), parts


def read_input(body: Mapping[str, Any]) -> tuple[Messages, list[dict[str, Any]]]:
    """The input's messages and its items for `input_items.list` (ids are added on storage).

    No input is fine only when `previous_response_id` supplies the conversation.
    """
    raw = body.get("input")
    if raw is None:
        if body.get("previous_response_id") is not None:
            return (), []
        raise missing_parameter("input")
    if isinstance(raw, str):
        return (("user", raw),), [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": raw}]}
        ]
    if not isinstance(raw, list):
        raise wrong_type("input", "one of a string or array of input items", raw)
    if not raw:
        raise bad_parameter(
            "Invalid 'input': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.",
            "input",
            "empty_array",
        )
    messages: list[tuple[str, str]] = []
    items: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        where = f"input[{i}]"
        if not isinstance(item, Mapping):
            raise wrong_type(where, "an object", item)
        kind = item.get("type", "message")
        if kind == "reasoning":
            continue  # a replayed reasoning item: context the simulator does not read
        if kind != "message":
            raise bad_parameter(
                f"The sandbox answers messages only, not '{kind}' items ({where}.type): it "
                "runs no tools. Send the conversation as messages.",
                f"{where}.type",
                "invalid_value",
            )
        role = item.get("role")
        if role is None:
            raise missing_parameter(f"{where}.role")
        if role not in INPUT_ROLES:
            raise invalid_value(role, INPUT_ROLES, f"{where}.role")
        text, parts = _content_text(item.get("content"), where)
        messages.append((role, text))
        if role == "assistant":
            parts = [
                {
                    "type": "output_text",
                    "text": p.get("text", p.get("refusal", "")),
                    "annotations": [],
                }
                for p in parts
            ]
            items.append({"type": "message", "role": role, "content": parts, "status": "completed"})
        else:
            items.append({"type": "message", "role": role, "content": parts})
    return tuple(messages), items
