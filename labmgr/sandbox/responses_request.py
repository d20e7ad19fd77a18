"""Checking a `/v1/responses` body as the real API does, and putting it as a chat request.

The Responses API asks the same model simulator as chat completions; this module turns its
body (`input`, `instructions`, `max_output_tokens`, `reasoning`, `text.format`, `include`…)
into a `ChatRequest`, with the Responses API's own parameter names in every error. The
checks the two endpoints share (temperature, top_p, reasoning effort, a reasoning model's
refusals) are the behaviour package's, so both refuse alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labmgr.sandbox.behaviour import (
    ChatRequest,
    ChatRequestError,
    ModelCard,
    check_reasoning_effort,
    check_reasoning_sampling,
    integer_param,
    temperature_param,
    top_p_param,
    unsupported_parameter,
)
from labmgr.sandbox.errors import APIError
from labmgr.sandbox.responses_input import (
    Messages,
    bad_parameter,
    invalid_value,
    missing_parameter,
    read_input,
    wrong_type,
)

__all__ = ["ResponsesRequest", "parse_responses_request"]

LOGPROBS = "message.output_text.logprobs"
ENCRYPTED_REASONING = "reasoning.encrypted_content"
INCLUDABLE = (
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    ENCRYPTED_REASONING,
    LOGPROBS,
)
MIN_OUTPUT_TOKENS = 16
MAX_TOP_LOGPROBS = 20
KNOWN_PARAMETERS = frozenset(
    (
        "model",
        "stream",
        "service_tier",
        "access_programs",
        "background",
        "background_options",
        "context_management",
        "conversation",
        "image",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "moderation",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "store",
        "stream_options",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
    )
)
"""Every body parameter `responses.create` can send."""
UNSUPPORTED = {
    "background": "The sandbox does not run background responses; leave 'background' out.",
    "conversation": "The sandbox keeps no conversations; use 'previous_response_id' or send "
    "the whole conversation as 'input'.",
    "prompt": "The sandbox has no stored prompts; send the prompt's text as 'input'.",
}
"""Parameters the sandbox refuses when set (deliberate differences from the real API)."""


@dataclass(frozen=True)
class ResponsesRequest:
    """A checked `/v1/responses` body: what to ask the simulator and what to echo back."""

    chat: ChatRequest
    """The request as the simulator takes it (instructions first, then the history and the
    input as (role, text) messages)."""
    input_messages: Messages
    """The input's own messages (no instructions, no history): what a later response that
    names this one as `previous_response_id` sees before its own input."""
    input_items: list[dict[str, Any]]
    """The input's messages as `input_items.list` shows them (ids are added on storage)."""
    echo: dict[str, Any]
    """The request fields a response object repeats (instructions, temperature, text…)."""
    reasoning_summary: str | None
    """``auto``/``concise``/``detailed`` when a reasoning summary was asked for."""
    include_logprobs: bool
    include_encrypted_reasoning: bool
    store: bool
    stream: bool
    previous_response_id: str | None


def _instructions(body: Mapping[str, Any]) -> str | None:
    value = body.get("instructions")
    if value is not None and not isinstance(value, str):
        raise wrong_type("instructions", "a string", value)
    return value or None


def _metadata(body: Mapping[str, Any]) -> dict[str, str]:
    value = body.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise wrong_type("metadata", "an object", value)
    if len(value) > 16:
        raise bad_parameter(
            "Invalid 'metadata': too many properties. Expected an object with at most 16 "
            f"properties, but got {len(value)} instead.",
            "metadata",
            "object_above_max_properties",
        )
    for key, item in value.items():
        if len(key) > 64:
            raise bad_parameter(
                f"Invalid 'metadata': key '{key[:20]}…' is longer than 64 characters.",
                "metadata",
                "invalid_value",
            )
        if not isinstance(item, str):
            raise wrong_type(f"metadata.{key}", "a string", item)
        if len(item) > 512:
            raise bad_parameter(
                f"Invalid 'metadata.{key}': string too long. Expected a string with maximum "
                f"length 512, but got a string with length {len(item)} instead.",
                f"metadata.{key}",
                "string_above_max_length",
            )
    return dict(value)


def _include(body: Mapping[str, Any]) -> tuple[str, ...]:
    value = body.get("include")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise wrong_type("include", "an array", value)
    for i, item in enumerate(value):
        if item not in INCLUDABLE:
            raise invalid_value(item, INCLUDABLE, f"include[{i}]")
    return tuple(value)


def _text_format(
    body: Mapping[str, Any], messages: Messages
) -> tuple[str, Mapping[str, Any] | None, dict[str, Any], str]:
    """(kind, schema, the format as echoed, verbosity) of `text`."""
    text = body.get("text")
    if text is None:
        text = {}
    if not isinstance(text, Mapping):
        raise wrong_type("text", "an object", text)
    verbosity = text.get("verbosity")
    if verbosity is None:
        verbosity = "medium"
    elif verbosity not in ("low", "medium", "high"):
        raise invalid_value(verbosity, ("low", "medium", "high"), "text.verbosity")
    fmt = text.get("format")
    if fmt is None:
        return "text", None, {"type": "text"}, verbosity
    if not isinstance(fmt, Mapping):
        raise wrong_type("text.format", "an object", fmt)
    kind = fmt.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        raise invalid_value(kind, ("text", "json_schema", "json_object"), "text.format.type")
    if kind == "json_object" and not any("json" in t.lower() for _, t in messages):
        raise bad_parameter(
            "Response input messages must contain the word 'json' in some form to use "
            "'text.format' of type 'json_object'.",
            "input",
        )
    if kind != "json_schema":
        return kind, None, {"type": kind}, verbosity
    name = fmt.get("name")
    if not isinstance(name, str) or not name:
        raise missing_parameter("text.format.name")
    schema = fmt.get("schema")
    if not isinstance(schema, Mapping):
        raise missing_parameter("text.format.schema")
    echoed = {"type": "json_schema", "name": name, "schema": dict(schema)}
    for key in ("description", "strict"):
        if fmt.get(key) is not None:
            echoed[key] = fmt[key]
    return kind, schema, echoed, verbosity


def _reasoning(card: ModelCard, body: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The reasoning effort and summary asked for (each None when not given)."""
    value = body.get("reasoning")
    if value is None:
        return None, None
    if not isinstance(value, Mapping):
        raise wrong_type("reasoning", "an object", value)
    effort = check_reasoning_effort(card, value.get("effort"), "reasoning.effort")
    summary = value.get("summary", value.get("generate_summary"))
    if summary is not None:
        if summary not in ("auto", "concise", "detailed"):
            raise invalid_value(summary, ("auto", "concise", "detailed"), "reasoning.summary")
        if not card.reasoning:
            raise unsupported_parameter("reasoning.summary")
    return effort, summary


def _tools(body: Mapping[str, Any]) -> str:
    tools = body.get("tools")
    if tools:
        raise bad_parameter(
            "The sandbox runs no tools; leave 'tools' out or send an empty list.", "tools"
        )
    choice = body.get("tool_choice")
    if choice is None:
        return "auto"
    if choice not in ("auto", "none"):
        raise bad_parameter(
            "The sandbox runs no tools; 'tool_choice' may only be 'auto' or 'none'.",
            "tool_choice",
        )
    return str(choice)


def _boolean(body: Mapping[str, Any], param: str, default: bool) -> bool:
    value = body.get(param)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise wrong_type(param, "a boolean", value)
    return value


def _check_envelope(body: Mapping[str, Any]) -> None:
    for key in body:
        if key not in KNOWN_PARAMETERS:
            raise bad_parameter(f"Unknown parameter: '{key}'.", key, "unknown_parameter")
    for key, message in UNSUPPORTED.items():
        if body.get(key):
            raise bad_parameter(message, key)
    if body.get("stream_options") is not None and not body.get("stream"):
        raise bad_parameter(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        )


def _optional_string(body: Mapping[str, Any], param: str) -> str | None:
    value = body.get(param)
    if value is not None and not isinstance(value, str):
        raise wrong_type(param, "a string", value)
    return value


def parse_responses_request(
    body: Mapping[str, Any], card: ModelCard, history: Messages = ()
) -> ResponsesRequest:
    """Check `body` for a model like `card` as the real API would; raise `APIError`.

    `history` is the conversation of the response named by `previous_response_id` (its
    inputs and its answer), which comes between the instructions and the new input.
    """
    try:
        return _parse(body, card, history)
    except ChatRequestError as exc:
        raise APIError(exc.status, exc.message, param=exc.param, code=exc.code) from None


def _parse(body: Mapping[str, Any], card: ModelCard, history: Messages) -> ResponsesRequest:
    _check_envelope(body)
    if not card.chat:
        raise APIError(
            400,
            "This model is only supported in v1/completions and not supported in v1/responses.",
            param="model",
            code="unsupported_model",
        )
    input_messages, input_items = read_input(body)
    instructions = _instructions(body)
    opening: Messages = (("developer", instructions),) if instructions else ()
    messages = opening + history + input_messages
    if not messages:
        raise missing_parameter("input")
    temperature = temperature_param(body)
    top_p = top_p_param(body)
    limit = integer_param(body, "max_output_tokens", MIN_OUTPUT_TOKENS, None)
    if limit is not None and limit > card.max_output_tokens:
        raise bad_parameter(
            f"max_output_tokens is too large: {limit}. This model supports at most "
            f"{card.max_output_tokens} output tokens, whereas you provided {limit}.",
            "max_output_tokens",
            "invalid_value",
        )
    top_logprobs = integer_param(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    include = _include(body)
    effort, summary = _reasoning(card, body)
    if card.reasoning:
        check_reasoning_sampling(body)
        if LOGPROBS in include:
            raise bad_parameter(
                f"Unsupported value: 'include' does not support '{LOGPROBS}' with this model.",
                "include",
                "unsupported_value",
            )
        if top_logprobs:
            raise unsupported_parameter("top_logprobs")
    kind, schema, echoed_format, verbosity = _text_format(body, messages)
    tool_choice = _tools(body)
    truncation = body.get("truncation") or "disabled"
    if truncation not in ("auto", "disabled"):
        raise invalid_value(truncation, ("auto", "disabled"), "truncation")
    metadata = _metadata(body)
    store = _boolean(body, "store", True)
    stream = _boolean(body, "stream", False)
    parallel = _boolean(body, "parallel_tool_calls", True)
    previous = _optional_string(body, "previous_response_id")
    chat = ChatRequest(
        messages=messages,
        n=1,
        temperature=temperature,
        max_tokens=limit,
        max_tokens_param="max_output_tokens",
        logprobs=LOGPROBS in include,
        top_logprobs=top_logprobs or 0,
        seed=None,
        response_format=kind,
        json_schema=schema,
        reasoning_effort=effort,
    )
    echo = {
        "instructions": instructions,
        "max_output_tokens": limit,
        "metadata": metadata,
        "parallel_tool_calls": parallel,
        "previous_response_id": previous,
        "prompt_cache_key": _optional_string(body, "prompt_cache_key"),
        "reasoning": {
            "effort": (effort or "medium") if card.reasoning else None,
            "summary": summary,
        },
        "safety_identifier": _optional_string(body, "safety_identifier"),
        "store": store,
        "temperature": temperature,
        "text": {"format": echoed_format, "verbosity": verbosity},
        "tool_choice": tool_choice,
        "top_logprobs": top_logprobs or 0,
        "top_p": top_p,
        "truncation": truncation,
    }
    user = _optional_string(body, "user")
    if user is not None:  # typed without null in the spec
        echo["user"] = user
    return ResponsesRequest(
        chat=chat,
        input_messages=input_messages,
        input_items=input_items,
        echo=echo,
        reasoning_summary=summary,
        include_logprobs=LOGPROBS in include,
        include_encrypted_reasoning=ENCRYPTED_REASONING in include,
        store=store,
        stream=stream,
        previous_response_id=previous,
    )
