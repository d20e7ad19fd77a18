"""A chat completion request body checked as the real API checks it, with its wording."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labmgr.sandbox.errors import (
    APIError,
    bad_request,
    invalid_value,
    missing_parameter,
    number_param,
    quoted,
    unsupported_parameter,
    wrong_type,
)

from .catalogue import ModelCard

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
MAX_N = 128
FORMATS = ("text", "json_object", "json_schema")
MAX_TOP_LOGPROBS = 20

Messages = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """The parts of a request body that decide what the model says."""

    messages: Messages
    """(role, text) per message; the text of content parts is concatenated."""
    n: int
    temperature: float
    max_tokens: int | None
    """``max_completion_tokens`` or ``max_tokens`` (a response's ``max_output_tokens``)."""
    logprobs: bool
    top_logprobs: int
    seed: int | None
    response_format: str = "text"
    """``text``, ``json_object`` or ``json_schema``."""
    json_schema: Mapping[str, Any] | None = None
    reasoning_effort: str | None = None
    """A reasoning model's effort (None: the default, ``medium``)."""


def sampling_params(body: Mapping[str, Any]) -> tuple[float, float]:
    """`temperature` in [0, 2] and `top_p` in [0, 1], each 1 when absent."""
    temperature = number_param(body, "temperature", 0, 2, integer=False)
    top_p = number_param(body, "top_p", 0, 1, integer=False)
    return (
        1.0 if temperature is None else float(temperature),
        1.0 if top_p is None else float(top_p),
    )


def check_stream_options(body: Mapping[str, Any]) -> None:
    if body.get("stream_options") is not None and not body.get("stream"):
        message = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
        raise bad_request(message, param="stream_options")


def check_output_limit(card: ModelCard, limit: int | None, param: str, kind: str) -> None:
    """Refuse a completion budget (`kind`: ``completion`` or ``output`` tokens) above the
    model's maximum."""
    if limit is not None and limit > card.max_output_tokens:
        message = (
            f"{param} is too large: {limit}. This model supports at most "
            f"{card.max_output_tokens} {kind} tokens, whereas you provided {limit}."
        )
        raise bad_request(message, param=param, code="invalid_value")


def check_reasoning_sampling(body: Mapping[str, Any]) -> None:
    """Refuse a `temperature` or `top_p` other than 1, as reasoning models do."""
    for param in ("temperature", "top_p"):
        value = body.get(param)
        if value is not None and value != 1:
            message = (
                f"Unsupported value: '{param}' does not support {value} with this model. "
                "Only the default (1) value is supported."
            )
            raise bad_request(message, param=param, code="unsupported_value")


def check_reasoning_effort(card: ModelCard, value: Any, param: str) -> str | None:
    """`value` as a reasoning effort `card` accepts (None when absent); `param` names it."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in EFFORTS:
        raise invalid_value(value if isinstance(value, str) else repr(value), EFFORTS, param)
    if not card.reasoning:
        raise unsupported_parameter(param)
    if value not in card.reasoning_efforts:
        message = (
            f"Unsupported value: '{param}' does not support '{value}' with this model. "
            f"Supported values are: {quoted(card.reasoning_efforts)}."
        )
        raise bad_request(message, param=param, code="unsupported_value")
    return value


def message_content(
    content: Any, where: str, text_types: tuple[str, ...], other_types: tuple[str, ...] | None
) -> tuple[str, list[dict[str, str]]]:
    """A message's text and its text parts (a string is one ``input_text`` part); parts of
    `other_types` are accepted unread (None: parts of any other type are)."""
    if isinstance(content, str):
        return content, [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        raise wrong_type(f"{where}.content", "one of a string or array of objects", content)
    parts: list[dict[str, str]] = []
    for j, part in enumerate(content):
        param = f"{where}.content[{j}]"
        if not isinstance(part, Mapping):
            raise wrong_type(param, "an object", part)
        kind = part.get("type")
        if kind is None:
            raise missing_parameter(f"{param}.type")
        if kind in text_types:
            key = "refusal" if kind == "refusal" else "text"
            if not isinstance(part.get(key), str):
                raise wrong_type(f"{param}.{key}", "a string", part.get(key))
            parts.append({"type": kind, key: part[key]})
        elif other_types is not None and kind not in other_types:
            raise invalid_value(kind, text_types + other_types, f"{param}.type")
    return "".join(p.get("text", p.get("refusal", "")) for p in parts), parts


def message_list(raw: Any, param: str, expected: str) -> list[Any]:
    """`raw` (a request's `messages` or `input`) checked as a non-empty array."""
    if raw is None:
        raise missing_parameter(param)
    if not isinstance(raw, list):
        raise wrong_type(param, expected, raw)
    if not raw:
        message = (
            f"Invalid '{param}': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead."
        )
        raise bad_request(message, param=param, code="empty_array")
    return raw


def message_role(message: Any, where: str, roles: tuple[str, ...]) -> str:
    """The role of one message: an object whose `role` is among `roles`."""
    if not isinstance(message, Mapping):
        raise wrong_type(where, "an object", message)
    role = message.get("role")
    if role is None:
        raise missing_parameter(f"{where}.role")
    if role not in roles:
        raise invalid_value(role, roles, f"{where}.role")
    return str(role)


def _messages(body: Mapping[str, Any]) -> Messages:
    parsed = []
    for i, message in enumerate(message_list(body.get("messages"), "messages", "an array")):
        where = f"messages[{i}]"
        role = message_role(message, where, ROLES)
        content = message.get("content")
        if content is None and role not in ("assistant", "function"):
            raise missing_parameter(f"{where}.content")
        content = "" if content is None else content
        text = message_content(content, where, ("text", "refusal"), None)[0]
        parsed.append((role, text))
    return tuple(parsed)


def output_format(
    value: Any, param: str, kinds: tuple[str, ...], messages: Messages, no_json: tuple[str, str]
) -> str:
    """The type of a `response_format` or `text.format` object; a ``json_object`` needs a
    message that says "json" (else `no_json`'s message, naming its param)."""
    if not isinstance(value, Mapping):
        raise wrong_type(param, "an object", value)
    kind = value.get("type")
    if kind not in kinds:
        raise invalid_value(kind, kinds, f"{param}.type")
    if kind == "json_object" and not any("json" in text.lower() for _, text in messages):
        raise bad_request(no_json[0], param=no_json[1])
    return str(kind)


def parse_request(body: Mapping[str, Any], card: ModelCard, *, legacy: bool = False) -> ChatRequest:
    """Check `body` for a model like `card` (`legacy`: a `/v1/completions` prompt)."""
    if not card.chat and not legacy:
        raise APIError(
            404,
            "This is not a chat model and thus not supported in the v1/chat/completions "
            "endpoint. Did you mean to use v1/completions?",
        )
    messages = _messages(body)
    n = number_param(body, "n", 1, MAX_N) or 1
    temperature, _ = sampling_params(body)
    logprobs = body.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise wrong_type("logprobs", "a boolean", logprobs)
    top_logprobs = number_param(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if top_logprobs is not None and not logprobs:
        message = (
            "Invalid value for 'top_logprobs': 'logprobs' must be set to true when "
            "'top_logprobs' is specified."
        )
        raise bad_request(message, param="top_logprobs", code="invalid_value")
    max_tokens = number_param(body, "max_tokens", 1, None)
    max_completion = number_param(body, "max_completion_tokens", 1, None)
    if max_tokens is not None and max_completion is not None:
        message = (
            "Invalid request: 'max_tokens' and 'max_completion_tokens' cannot both be set. "
            "Use 'max_completion_tokens' only."
        )
        raise bad_request(message, param="max_tokens", code="invalid_request")
    param = "max_completion_tokens" if max_completion is not None else "max_tokens"
    limit = max_completion if max_completion is not None else max_tokens
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise wrong_type("seed", "an integer", seed)
    effort = check_reasoning_effort(card, body.get("reasoning_effort"), "reasoning_effort")
    if card.reasoning:
        if max_tokens is not None:
            message = (
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
            raise bad_request(message, param="max_tokens", code="unsupported_parameter")
        check_reasoning_sampling(body)
        if logprobs:
            raise unsupported_parameter("logprobs")
        if body.get("stop") is not None:  # "not supported with reasoning models o3, o4-mini"
            raise unsupported_parameter("stop")
    check_output_limit(card, limit, param, "completion")
    response_format, json_schema = _response_format(body.get("response_format"), messages)
    return ChatRequest(
        messages=messages,
        n=n,
        temperature=temperature,
        max_tokens=limit,
        logprobs=bool(logprobs),
        top_logprobs=top_logprobs or 0,
        seed=seed,
        response_format=response_format,
        json_schema=json_schema,
        reasoning_effort=effort,
    )


def _response_format(value: Any, messages: Messages) -> tuple[str, Mapping[str, Any] | None]:
    if value is None:
        return "text", None
    no_json = (
        "'messages' must contain the word 'json' in some form, to use 'response_format' of "
        "type 'json_object'.",
        "messages",
    )
    kind = output_format(value, "response_format", FORMATS, messages, no_json)
    if kind != "json_schema":
        return kind, None
    spec = value.get("json_schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise missing_parameter("response_format.json_schema.name")
    schema = spec.get("schema")
    return kind, schema if isinstance(schema, Mapping) else None


def context_length_error(
    card: ModelCard, prompt_tokens: int, max_tokens: int | None, param: str = "messages"
) -> APIError | None:
    """The real API's error when a prompt (plus the requested completion) is too long."""
    window = card.context_window
    if param != "messages" and prompt_tokens + (max_tokens or 0) > window:
        message = (
            "Your input exceeds the context window of this model. Please adjust your input "
            "and try again."
        )
    elif prompt_tokens > window:
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages."
        )
    elif max_tokens is not None and prompt_tokens + max_tokens > window:
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, "
            f"{max_tokens} in the completion). Please reduce the length of the messages or "
            "completion."
        )
    else:
        return None
    return bad_request(message, param=param, code="context_length_exceeded")
