"""Rules for chat messages in a training example: roles, keys, content parts, tool calls."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

ROLES = ("system", "developer", "user", "assistant", "tool")
_FILL_IN_THE_MIDDLE = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")
FORBIDDEN_TOKENS = ("<|endoftext|>", "<|endofprompt|>", *_FILL_IN_THE_MIDDLE)

_ALLOWED_KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "weight", "tool_calls"},
    "tool": {"role", "content", "tool_call_id"},
}
_PART_TYPES = {"text": {"type", "text"}, "image_url": {"type", "image_url"}}
_IMAGE_ROLES = {"user"}
_IMAGE_DETAILS = ("low", "high", "auto")  # a tuple: any JSON value can be looked up

Severity = Literal["error", "warning"]


@dataclass
class Findings:
    """Errors and warnings about one example, each a message naming where in the example."""

    items: list[tuple[Severity, str]] = field(default_factory=list)

    def error(self, message: str) -> None:
        self.items.append(("error", message))

    def warning(self, message: str) -> None:
        self.items.append(("warning", message))


_JSON_TYPE_NAMES: dict[type, str] = {dict: "object", list: "array", str: "string"}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _check_text(text: str, where: str, out: Findings) -> None:
    for token in FORBIDDEN_TOKENS:
        if token in text:
            out.error(f"{where} contains the special token {token}, which is not allowed")


def _check_part(part: Any, role: str, where: str, out: Findings) -> None:
    if not isinstance(part, dict):
        out.error(f"{where} must be an object with a 'type', got {_type_name(part)}")
        return
    kind = part.get("type")
    if not isinstance(kind, str) or kind not in _PART_TYPES:
        out.error(f"{where}: unknown content part type {kind!r} (expected 'text' or 'image_url')")
        return
    for key in sorted(set(part) - _PART_TYPES[kind]):
        out.error(f"{where}: unknown key {key!r} in a {kind} part")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            out.error(f"{where}: a text part needs a string 'text'")
        else:
            _check_text(part["text"], where, out)
        return
    if role not in _IMAGE_ROLES:
        out.error(f"{where}: image_url parts are only allowed in user messages, not {role}")
    image = part.get("image_url")
    if not isinstance(image, dict) or not isinstance(image.get("url"), str):
        out.error(f"{where}: an image_url part needs an object with a string 'url'")
        return
    url = image["url"]
    if not url.startswith(("https://", "http://", "data:image/")):
        out.error(f"{where}: image url must be http(s):// or a data:image/ URL")
    for key in sorted(set(image) - {"url", "detail"}):
        out.error(f"{where}: unknown key {key!r} in image_url")
    if "detail" in image and image["detail"] not in _IMAGE_DETAILS:
        out.error(f"{where}: image detail must be one of low, high, auto")


def _check_content(message: dict[str, Any], role: str, where: str, out: Findings) -> None:
    has_calls = bool(message.get("tool_calls"))
    if "content" not in message or message["content"] is None:
        if not (role == "assistant" and has_calls):
            article = "an" if role[0] in "aeiou" else "a"
            out.error(f"{where}: {article} {role} message needs 'content'")
        return
    content = message["content"]
    if isinstance(content, str):
        _check_text(content, f"{where}.content", out)
        if role == "assistant" and not content.strip() and not has_calls:
            out.warning(f"{where}: empty assistant content (the model learns to say nothing)")
    elif isinstance(content, list):
        if not content:
            out.error(f"{where}.content is an empty list")
        for index, part in enumerate(content):
            _check_part(part, role, f"{where}.content[{index}]", out)
    else:
        out.error(f"{where}.content must be a string or a list of parts, got {_type_name(content)}")


def _check_tool_calls(calls: Any, where: str, seen_ids: set[str], out: Findings) -> list[str]:
    names: list[str] = []
    if not isinstance(calls, list) or not calls:
        out.error(f"{where}.tool_calls must be a non-empty list")
        return names
    for index, call in enumerate(calls):
        at = f"{where}.tool_calls[{index}]"
        if not isinstance(call, dict):
            out.error(f"{at} must be an object")
            continue
        for key in sorted(set(call) - {"id", "type", "function"}):
            out.error(f"{at}: unknown key {key!r}")
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            out.error(f"{at} needs a non-empty string 'id'")
        elif call_id in seen_ids:
            out.error(f"{at}: tool call id {call_id!r} is used twice in this example")
        else:
            seen_ids.add(call_id)
        if call.get("type") != "function":
            out.error(f"{at}.type must be 'function'")
        function = call.get("function")
        if not isinstance(function, dict):
            out.error(f"{at} needs a 'function' object with 'name' and 'arguments'")
            continue
        for key in sorted(set(function) - {"name", "arguments"}):
            out.error(f"{at}.function: unknown key {key!r}")
        if not isinstance(function.get("name"), str) or not function.get("name"):
            out.error(f"{at}.function needs a string 'name'")
        else:
            names.append(function["name"])
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            out.error(f"{at}.function.arguments must be a JSON-encoded string")
        else:
            try:
                json.loads(arguments)
            except ValueError:
                out.warning(f"{at}.function.arguments is not valid JSON")
    return names


@dataclass
class MessagesSummary:
    """What the checks learned about a message list, for example-level rules."""

    roles: list[str] = field(default_factory=list)
    trained_assistant_messages: int = 0
    tool_names: list[str] = field(default_factory=list)


def check_messages(messages: Any, where: str, out: Findings) -> MessagesSummary:
    """Check every message of `messages` (the value at `where`, e.g. ``messages``)."""
    summary = MessagesSummary()
    if not isinstance(messages, list):
        out.error(f"{where} must be a list of messages, got {_type_name(messages)}")
        return summary
    if not messages:
        out.error(f"{where} is empty")
        return summary
    call_ids: set[str] = set()
    for index, message in enumerate(messages):
        at = f"{where}[{index}]"
        if not isinstance(message, dict):
            out.error(f"{at} must be an object, got {_type_name(message)}")
            continue
        role = message.get("role")
        if role not in ROLES:
            hint = " (use 'tool' messages and 'tool_calls')" if role == "function" else ""
            out.error(f"{at}: role {role!r} is not one of {', '.join(ROLES)}{hint}")
            continue
        summary.roles.append(role)
        for key in sorted(set(message) - _ALLOWED_KEYS[role]):
            if key == "weight":
                out.error(f"{at}: 'weight' is only allowed on assistant messages")
            else:
                out.error(f"{at}: unknown key {key!r} in a {role} message")
        if "name" in message and not isinstance(message["name"], str):
            out.error(f"{at}.name must be a string")
        _check_content(message, role, at, out)
        if role == "assistant":
            weight = message.get("weight", 1)
            if isinstance(weight, bool) or weight not in (0, 1):  # a JSON value: 0 or 1 only
                out.error(f"{at}.weight must be 0 or 1, got {json.dumps(weight)}")
                summary.trained_assistant_messages += 1  # reported once, as a weight error
            elif weight != 0:
                summary.trained_assistant_messages += 1
            if "tool_calls" in message:
                summary.tool_names += _check_tool_calls(message["tool_calls"], at, call_ids, out)
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                out.error(f"{at}: a tool message needs a string 'tool_call_id'")
            elif call_id not in call_ids:
                out.error(f"{at}: tool_call_id {call_id!r} answers no earlier tool call")
    return summary
