"""Validation of a chat completion request body, with the real API's error wording."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .catalogue import ModelCard

__all__ = [
    "ChatRequest",
    "ChatRequestError",
    "check_reasoning_effort",
    "check_reasoning_sampling",
    "integer_param",
    "invalid_type",
    "parse_request",
    "temperature_param",
    "top_p_param",
    "unsupported_parameter",
]

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
MAX_N = 128
MAX_TOP_LOGPROBS = 20

Messages = tuple[tuple[str, str], ...]


class ChatRequestError(Exception):
    """A chat request the real API would refuse (message, param and code as sent).

    `status` is the HTTP status the real API answers with: 400 for nearly everything,
    404 for a legacy completion model asked through the chat endpoint.
    """

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        status: int = 400,
    ):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """The parts of a request body that decide what the model says."""

    messages: Messages
    """(role, text) per message; the text of content parts is concatenated."""
    n: int
    temperature: float
    max_tokens: int | None
    """``max_completion_tokens`` or ``max_tokens``, whichever was given."""
    max_tokens_param: str
    logprobs: bool
    top_logprobs: int
    seed: int | None
    response_format: str = "text"
    """``text``, ``json_object`` or ``json_schema``."""
    json_schema: Mapping[str, Any] | None = None
    """The schema of a ``json_schema`` response format."""
    reasoning_effort: str | None = None
    """A reasoning model's effort (None: the default, ``medium``)."""


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def invalid_type(param: str, expected: str, value: Any) -> ChatRequestError:
    """The real API's error for a parameter of the wrong JSON type."""
    return ChatRequestError(
        f"Invalid type for '{param}': expected {expected}, but got {_type_name(value)} instead.",
        param=param,
        code="invalid_type",
    )


def integer_param(body: Mapping[str, Any], param: str, low: int, high: int | None) -> int | None:
    """`body[param]` checked as an integer in [low, high] (None when absent or null)."""
    value = body.get(param)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise invalid_type(param, "an integer", value)
    if value < low:
        raise ChatRequestError(
            f"Invalid '{param}': integer below minimum value. Expected a value >= {low}, "
            f"but got {value} instead.",
            param=param,
            code="integer_below_min_value",
        )
    if high is not None and value > high:
        raise ChatRequestError(
            f"Invalid '{param}': integer above maximum value. Expected a value <= {high}, "
            f"but got {value} instead.",
            param=param,
            code="integer_above_max_value",
        )
    return value


def temperature_param(body: Mapping[str, Any]) -> float:
    """`body["temperature"]` checked against [0, 2]; 1 when absent or null."""
    value = body.get("temperature")
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_type("temperature", "a decimal", value)
    if value < 0:
        raise ChatRequestError(
            "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, "
            f"but got {value} instead.",
            param="temperature",
            code="decimal_below_min_value",
        )
    if value > 2:
        raise ChatRequestError(
            "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, "
            f"but got {value} instead.",
            param="temperature",
            code="decimal_above_max_value",
        )
    return float(value)


def top_p_param(body: Mapping[str, Any]) -> float:
    """`body["top_p"]` checked against [0, 1]; 1 when absent or null."""
    value = body.get("top_p")
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_type("top_p", "a decimal", value)
    if value < 0:
        raise ChatRequestError(
            "Invalid 'top_p': decimal below minimum value. Expected a value >= 0, "
            f"but got {value} instead.",
            param="top_p",
            code="decimal_below_min_value",
        )
    if value > 1:
        raise ChatRequestError(
            "Invalid 'top_p': decimal above maximum value. Expected a value <= 1, "
            f"but got {value} instead.",
            param="top_p",
            code="decimal_above_max_value",
        )
    return float(value)


def unsupported_parameter(param: str) -> ChatRequestError:
    """The real API's error for a parameter a model does not take at all."""
    return ChatRequestError(
        f"Unsupported parameter: '{param}' is not supported with this model.",
        param=param,
        code="unsupported_parameter",
    )


def check_reasoning_sampling(body: Mapping[str, Any]) -> None:
    """Refuse a `temperature` or `top_p` other than 1, as reasoning models do."""
    for param in ("temperature", "top_p"):
        value = body.get(param)
        if value is not None and value != 1:
            raise ChatRequestError(
                f"Unsupported value: '{param}' does not support {value} with this model. "
                "Only the default (1) value is supported.",
                param=param,
                code="unsupported_value",
            )


EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
"""Every reasoning effort the API knows; each model accepts some of them."""


def _quoted(values: tuple[str, ...]) -> str:
    quoted = [f"'{v}'" for v in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def check_reasoning_effort(card: ModelCard, value: Any, param: str) -> str | None:
    """`value` as a reasoning effort `card` accepts (None when absent); `param` names it in
    errors (``reasoning_effort`` for chat, ``reasoning.effort`` for responses)."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in EFFORTS:
        shown = value if isinstance(value, str) else repr(value)
        raise ChatRequestError(
            f"Invalid value: '{shown}'. Supported values are: {_quoted(EFFORTS)}.",
            param=param,
            code="invalid_value",
        )
    if not card.reasoning:
        raise unsupported_parameter(param)
    if value not in card.reasoning_efforts:
        raise ChatRequestError(
            f"Unsupported value: '{param}' does not support '{value}' with this model. "
            f"Supported values are: {_quoted(card.reasoning_efforts)}.",
            param=param,
            code="unsupported_value",
        )
    return value


def _content_text(content: Any, index: int, role: str) -> str:
    if isinstance(content, str):
        return content
    if content is None and role in ("assistant", "function"):
        return ""
    if isinstance(content, list):
        parts: list[str] = []
        for j, part in enumerate(content):
            if not isinstance(part, Mapping) or "type" not in part:
                raise ChatRequestError(
                    f"Missing required parameter: 'messages[{index}].content[{j}].type'.",
                    param=f"messages[{index}].content[{j}].type",
                    code="missing_required_parameter",
                )
            if part["type"] in ("text", "refusal"):
                text = part.get("text", part.get("refusal"))
                if not isinstance(text, str):
                    raise invalid_type(f"messages[{index}].content[{j}].text", "a string", text)
                parts.append(text)
        return "".join(parts)
    if content is None:
        raise ChatRequestError(
            f"Missing required parameter: 'messages[{index}].content'.",
            param=f"messages[{index}].content",
            code="missing_required_parameter",
        )
    raise invalid_type(f"messages[{index}].content", "one of a string or array of objects", content)


def _messages(body: Mapping[str, Any]) -> Messages:
    raw = body.get("messages")
    if raw is None:
        raise ChatRequestError(
            "Missing required parameter: 'messages'.",
            param="messages",
            code="missing_required_parameter",
        )
    if not isinstance(raw, list):
        raise invalid_type("messages", "an array", raw)
    if not raw:
        raise ChatRequestError(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            param="messages",
            code="empty_array",
        )
    parsed = []
    for i, message in enumerate(raw):
        if not isinstance(message, Mapping):
            raise invalid_type(f"messages[{i}]", "an object", message)
        role = message.get("role")
        if role is None:
            raise ChatRequestError(
                f"Missing required parameter: 'messages[{i}].role'.",
                param=f"messages[{i}].role",
                code="missing_required_parameter",
            )
        if role not in ROLES:
            raise ChatRequestError(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', "
                "'user', 'function', 'tool', and 'developer'.",
                param=f"messages[{i}].role",
                code="invalid_value",
            )
        parsed.append((role, _content_text(message.get("content"), i, role)))
    return tuple(parsed)


def parse_request(body: Mapping[str, Any], card: ModelCard, *, legacy: bool = False) -> ChatRequest:
    """Check `body` as the real API would for a model like `card`; raise `ChatRequestError`."""
    if not card.chat and not legacy:
        raise ChatRequestError(
            "This is not a chat model and thus not supported in the v1/chat/completions "
            "endpoint. Did you mean to use v1/completions?",
            status=404,
        )
    messages = _messages(body)
    n = integer_param(body, "n", 1, MAX_N) or 1
    temperature = temperature_param(body)
    top_p_param(body)
    logprobs = body.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise invalid_type("logprobs", "a boolean", logprobs)
    top_logprobs = integer_param(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if top_logprobs is not None and not logprobs:
        raise ChatRequestError(
            "Invalid value for 'top_logprobs': 'logprobs' must be set to true when "
            "'top_logprobs' is specified.",
            param="top_logprobs",
            code="invalid_value",
        )
    max_tokens = integer_param(body, "max_tokens", 1, None)
    max_completion = integer_param(body, "max_completion_tokens", 1, None)
    if max_tokens is not None and max_completion is not None:
        raise ChatRequestError(
            "Invalid request: 'max_tokens' and 'max_completion_tokens' cannot both be set. "
            "Use 'max_completion_tokens' only.",
            param="max_tokens",
            code="invalid_request",
        )
    param = "max_completion_tokens" if max_completion is not None else "max_tokens"
    limit = max_completion if max_completion is not None else max_tokens
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise invalid_type("seed", "an integer", seed)
    effort = check_reasoning_effort(card, body.get("reasoning_effort"), "reasoning_effort")
    if card.reasoning:
        _check_reasoning_model(max_tokens, body, bool(logprobs))
    if limit is not None and limit > card.max_output_tokens:
        raise ChatRequestError(
            f"{param} is too large: {limit}. This model supports at most "
            f"{card.max_output_tokens} completion tokens, whereas you provided {limit}.",
            param=param,
            code="invalid_value",
        )
    response_format, json_schema = _response_format(body.get("response_format"), messages)
    return ChatRequest(
        response_format=response_format,
        json_schema=json_schema,
        messages=messages,
        n=n,
        temperature=temperature,
        max_tokens=limit,
        max_tokens_param=param,
        logprobs=bool(logprobs),
        top_logprobs=top_logprobs or 0,
        seed=seed,
        reasoning_effort=effort,
    )


def _response_format(value: Any, messages: Messages) -> tuple[str, Mapping[str, Any] | None]:
    if value is None:
        return "text", None
    if not isinstance(value, Mapping):
        raise invalid_type("response_format", "an object", value)
    kind = value.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        raise ChatRequestError(
            f"Invalid value: '{kind}'. Supported values are: 'text', 'json_object', and "
            "'json_schema'.",
            param="response_format.type",
            code="invalid_value",
        )
    if kind == "json_object" and not any("json" in text.lower() for _, text in messages):
        raise ChatRequestError(
            "'messages' must contain the word 'json' in some form, to use 'response_format' "
            "of type 'json_object'.",
            param="messages",
        )
    if kind != "json_schema":
        return kind, None
    spec = value.get("json_schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise ChatRequestError(
            "Missing required parameter: 'response_format.json_schema.name'.",
            param="response_format.json_schema.name",
            code="missing_required_parameter",
        )
    schema = spec.get("schema")
    return kind, schema if isinstance(schema, Mapping) else None


def _check_reasoning_model(max_tokens: int | None, body: Mapping[str, Any], logprobs: bool) -> None:
    if max_tokens is not None:
        raise ChatRequestError(
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            param="max_tokens",
            code="unsupported_parameter",
        )
    check_reasoning_sampling(body)
    if logprobs:
        raise unsupported_parameter("logprobs")


def context_length_error(
    card: ModelCard, prompt_tokens: int, max_tokens: int | None
) -> ChatRequestError | None:
    """The real API's error when a prompt (plus the requested completion) is too long."""
    window = card.context_window
    if prompt_tokens > window:
        return ChatRequestError(
            f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages.",
            param="messages",
            code="context_length_exceeded",
        )
    if max_tokens is not None and prompt_tokens + max_tokens > window:
        return ChatRequestError(
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, "
            f"{max_tokens} in the completion). Please reduce the length of the messages or "
            "completion.",
            param="messages",
            code="context_length_exceeded",
        )
    return None
