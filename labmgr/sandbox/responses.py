"""`/v1/responses`: create (plain or streamed), retrieve, delete, input items, token counts. A
body is checked as the real API checks it, and put as a chat request (instructions, then the
`previous_response_id` history, then the input). Stored responses are scoped like files and
live in memory only."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.behaviour import Completion, ModelCard, prompt_tokens, served_model_name
from labmgr.sandbox.behaviour.request import (
    ChatRequest,
    Messages,
    check_output_limit,
    check_reasoning_effort,
    check_reasoning_sampling,
    check_stream_options,
    message_content,
    message_list,
    message_role,
    output_format,
    sampling_params,
)
from labmgr.sandbox.chat import check_model_access
from labmgr.sandbox.errors import (
    bad_request,
    invalid_value,
    metadata_param,
    missing_parameter,
    number_param,
    unsupported_parameter,
    wrong_type,
)
from labmgr.sandbox.protocol import Request, Response, StreamResponse
from labmgr.sandbox.store import request_id
from labmgr.sandbox.streaming import stream_events

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox


MAX_STORED = 10_000
"""Stored responses kept in memory; the oldest are forgotten first."""
LOGPROBS = "message.output_text.logprobs"
ENCRYPTED_REASONING = "reasoning.encrypted_content"
INCLUDABLE = (
    *"""file_search_call.results web_search_call.results web_search_call.action.sources
    message.input_image.image_url computer_call_output.output.image_url
    code_interpreter_call.outputs""".split(),  # noqa: SIM905
    ENCRYPTED_REASONING,
    LOGPROBS,
)
MIN_OUTPUT_TOKENS = 16
KNOWN_PARAMETERS = frozenset(
    """model stream service_tier access_programs background background_options
    context_management conversation image include input instructions max_output_tokens
    max_tool_calls metadata moderation parallel_tool_calls previous_response_id prompt
    prompt_cache_key prompt_cache_options prompt_cache_retention reasoning safety_identifier
    store stream_options temperature text tool_choice tools top_logprobs top_p truncation
    user""".split()  # noqa: SIM905
)
"""Every body parameter `responses.create` can send."""
UNSUPPORTED = {
    "background": "The sandbox does not run background responses; leave 'background' out.",
    "conversation": "The sandbox keeps no conversations; use 'previous_response_id' or send "
    "the whole conversation as 'input'.",
    "prompt": "The sandbox has no stored prompts; send the prompt's text as 'input'.",
}
FORMATS = ("text", "json_schema", "json_object")
INPUT_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "refusal")
OTHER_PARTS = ("input_image", "input_file", "input_audio")


@dataclass(frozen=True)
class ResponsesRequest:
    """A checked `/v1/responses` body: what to ask the simulator and what to echo back."""

    chat: ChatRequest
    input_messages: Messages
    """The input's own messages: what a later response naming this one sees as history."""
    input_items: list[dict[str, Any]]
    """The input as `input_items.list` shows it (ids are added on storage)."""
    echo: dict[str, Any]
    """The request fields a response object repeats (`store`, `reasoning.summary` among them)."""
    include: tuple[str, ...]


def read_input(body: Mapping[str, Any]) -> tuple[Messages, list[dict[str, Any]]]:
    """The input's messages and its items (no input only with `previous_response_id`)."""
    raw = body.get("input")
    if raw is None and body.get("previous_response_id") is not None:
        return (), []
    if isinstance(raw, str):
        raw = [{"role": "user", "content": raw}]
    messages: list[tuple[str, str]] = []
    items: list[dict[str, Any]] = []
    for i, item in enumerate(message_list(raw, "input", "one of a string or array of input items")):
        where = f"input[{i}]"
        if not isinstance(item, Mapping):
            raise wrong_type(where, "an object", item)
        kind = item.get("type", "message")
        if kind == "reasoning":
            continue  # a replayed reasoning item: context the simulator does not read
        if kind != "message":
            message = (
                f"The sandbox answers messages only, not '{kind}' items ({where}.type): it "
                "runs no tools. Send the conversation as messages."
            )
            raise bad_request(message, param=f"{where}.type", code="invalid_value")
        role = message_role(item, where, INPUT_ROLES)
        text, parts = message_content(item.get("content"), where, TEXT_PARTS, OTHER_PARTS)
        messages.append((role, text))
        entry = {"type": "message", "role": role, "content": parts}
        if role == "assistant":
            entry["content"] = [
                {
                    "type": "output_text",
                    "text": p.get("text", p.get("refusal", "")),
                    "annotations": [],
                }
                for p in parts
            ]
            entry["status"] = "completed"
        items.append(entry)
    return tuple(messages), items


def _text_format(
    body: Mapping[str, Any], messages: Messages
) -> tuple[str, Mapping[str, Any] | None, dict[str, Any]]:
    """(kind, schema, `text` as echoed) of the `text` parameter."""
    text = {} if body.get("text") is None else body["text"]
    if not isinstance(text, Mapping):
        raise wrong_type("text", "an object", text)
    verbosity = text.get("verbosity") or "medium"
    if verbosity not in ("low", "medium", "high"):
        raise invalid_value(verbosity, ("low", "medium", "high"), "text.verbosity")
    fmt: Any = {"type": "text"} if text.get("format") is None else text["format"]
    no_json = (
        "Response input messages must contain the word 'json' in some form to use "
        "'text.format' of type 'json_object'.",
        "input",
    )
    kind = output_format(fmt, "text.format", FORMATS, messages, no_json)
    echoed: dict[str, Any] = {"type": kind}
    schema = None
    if kind == "json_schema":
        name, schema = fmt.get("name"), fmt.get("schema")
        if not isinstance(name, str) or not name:
            raise missing_parameter("text.format.name")
        if not isinstance(schema, Mapping):
            raise missing_parameter("text.format.schema")
        echoed |= {"name": name, "schema": dict(schema)}
        echoed |= {k: fmt[k] for k in ("description", "strict") if fmt.get(k) is not None}
    return kind, schema, {"format": echoed, "verbosity": verbosity}


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


def _tool_choice(body: Mapping[str, Any]) -> str:
    if body.get("tools"):
        raise bad_request(
            "The sandbox runs no tools; leave 'tools' out or send an empty list.", param="tools"
        )
    choice = body.get("tool_choice") or "auto"
    if choice not in ("auto", "none"):
        message = "The sandbox runs no tools; 'tool_choice' may only be 'auto' or 'none'."
        raise bad_request(message, param="tool_choice")
    return str(choice)


def _typed(body: Mapping[str, Any], param: str, kind: type, default: Any = None) -> Any:
    value = body.get(param)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise wrong_type(param, "a boolean" if kind is bool else "a string", value)
    return value


def parse_responses_request(
    body: Mapping[str, Any], card: ModelCard, history: Messages = ()
) -> ResponsesRequest:
    """Check `body` for a model like `card`; `history` is the conversation of the response
    named by `previous_response_id`, which comes between the instructions and the input."""
    for key in body:
        if key not in KNOWN_PARAMETERS:
            raise bad_request(f"Unknown parameter: '{key}'.", param=key, code="unknown_parameter")
    for key, message in UNSUPPORTED.items():
        if body.get(key):
            raise bad_request(message, param=key)
    check_stream_options(body)
    if not card.chat:
        raise bad_request(
            "This model is only supported in v1/completions and not supported in v1/responses.",
            param="model",
            code="unsupported_model",
        )
    input_messages, input_items = read_input(body)
    instructions = _typed(body, "instructions", str) or None
    opening: Messages = (("developer", instructions),) if instructions else ()
    messages = opening + history + input_messages
    if not messages:
        raise missing_parameter("input")
    temperature, top_p = sampling_params(body)
    limit = number_param(body, "max_output_tokens", MIN_OUTPUT_TOKENS, None)
    check_output_limit(card, limit, "max_output_tokens", "output")
    top_logprobs = number_param(body, "top_logprobs", 0, 20) or 0
    include = [] if body.get("include") is None else body["include"]
    if not isinstance(include, list):
        raise wrong_type("include", "an array", include)
    for i, item in enumerate(include):
        if item not in INCLUDABLE:
            raise invalid_value(item, INCLUDABLE, f"include[{i}]")
    effort, summary = _reasoning(card, body)
    if card.reasoning:
        check_reasoning_sampling(body)
        if LOGPROBS in include:
            message = f"Unsupported value: 'include' does not support '{LOGPROBS}' with this model."
            raise bad_request(message, param="include", code="unsupported_value")
        if top_logprobs:
            raise unsupported_parameter("top_logprobs")
    kind, schema, text = _text_format(body, messages)
    truncation = body.get("truncation") or "disabled"
    if truncation not in ("auto", "disabled"):
        raise invalid_value(truncation, ("auto", "disabled"), "truncation")
    store = _typed(body, "store", bool, True)
    _typed(body, "stream", bool)
    chat = ChatRequest(
        messages=messages,
        n=1,
        temperature=temperature,
        max_tokens=limit,
        logprobs=LOGPROBS in include,
        top_logprobs=top_logprobs,
        seed=None,
        response_format=kind,
        json_schema=schema,
        reasoning_effort=effort,
    )
    echo = {
        "instructions": instructions,
        "max_output_tokens": limit,
        "metadata": metadata_param(body) or {},
        "parallel_tool_calls": _typed(body, "parallel_tool_calls", bool, True),
        "previous_response_id": _typed(body, "previous_response_id", str),
        "prompt_cache_key": _typed(body, "prompt_cache_key", str),
        "reasoning": {
            "effort": (effort or "medium") if card.reasoning else None,
            "summary": summary,
        },
        "safety_identifier": _typed(body, "safety_identifier", str),
        "store": store,
        "temperature": temperature,
        "text": text,
        "tool_choice": _tool_choice(body),
        "top_logprobs": top_logprobs,
        "top_p": top_p,
        "truncation": truncation,
    }
    user = _typed(body, "user", str)
    if user is not None:  # typed without null in the spec
        echo["user"] = user
    return ResponsesRequest(chat, input_messages, input_items, echo, tuple(include))


def _history(sb: Sandbox, account: Account, body: dict[str, Any]) -> Messages:
    previous = body.get("previous_response_id")
    if previous is None:
        return ()
    if not isinstance(previous, str):
        raise wrong_type("previous_response_id", "a string", previous)
    record = sb.store.visible(sb.store.responses, previous, account.scope)
    if record is None:
        message = f"Previous response with id '{previous}' not found."
        raise bad_request(message, param="previous_response_id", code="previous_response_not_found")
    return tuple((role, text) for role, text in record["conversation"])


def _output(
    request: ResponsesRequest, completion: Completion, reasoning: bool
) -> tuple[list[dict[str, Any]], str, str]:
    """The output items, the response status and the answer's text."""
    choice = completion.choices[0]
    text = (choice.get("message") or {}).get("content") or ""
    status = "incomplete" if choice.get("finish_reason") == "length" else "completed"
    output: list[dict[str, Any]] = []
    if reasoning:
        spent = int(completion.usage["completion_tokens_details"]["reasoning_tokens"])
        item: dict[str, Any] = {"id": request_id("rs_"), "type": "reasoning", "summary": []}
        if request.echo["reasoning"]["summary"] and spent:
            # a summary naming what the last user message asks (model output: plain)
            asked = (t for r, t in reversed(request.chat.messages) if r == "user" and t.strip())
            words = next(asked, "").split()
            topic = " ".join(words[:12]) + (" …" if len(words) > 12 else "")
            summary = (
                f"**Answering the request**\n\nThe user asks: {topic}\nI will answer directly."
            )
            item["summary"] = [{"type": "summary_text", "text": summary}]
        if ENCRYPTED_REASONING in request.include:
            # an opaque stand-in for the encrypted reasoning a client may send back
            payload = json.dumps({"id": item["id"], "reasoning_tokens": spent}).encode()
            item["encrypted_content"] = "gAAAAA" + base64.urlsafe_b64encode(payload).decode()
        output.append(item)
    if text or status == "completed" or not reasoning:
        logprobs = (choice.get("logprobs") or {}).get("content") or []
        output.append(
            {
                "id": request_id("msg_"),
                "type": "message",
                "status": status,
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": text,
                        "annotations": [],
                        "logprobs": logprobs if LOGPROBS in request.include else [],
                    }
                ],
            }
        )
    return output, status, text


def create_response(sb: Sandbox, account: Account, body: dict[str, Any]) -> dict[str, Any]:
    """Answer one `/v1/responses` body (a request's, or a Batch API line's): the response
    object, stored when `store` says so."""
    model, card = check_model_access(sb, account, body.get("model"))
    history = _history(sb, account, body)
    request = parse_responses_request(body, card, history)
    completion = sb.simulator.answer(model, request.chat)
    chat_usage = completion.usage
    prompt, spent = int(chat_usage["prompt_tokens"]), int(chat_usage["completion_tokens"])
    sb.stats.usage(model, 1, prompt, spent, "responses.create")
    output, status, text = _output(request, completion, card.reasoning)
    now = time.time()
    response = {
        "id": request_id("resp_"),
        "object": "response",
        "created_at": int(now),
        "status": status,
        "background": False,
        "completed_at": int(now) if status == "completed" else None,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "model": served_model_name(model),
        "output": output,
        "service_tier": "default",
        "tools": [],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": spent,
            "output_tokens_details": {
                "reasoning_tokens": int(chat_usage["completion_tokens_details"]["reasoning_tokens"])
            },
            "total_tokens": prompt + spent,
        },
        "max_tool_calls": None,
        **request.echo,
    }
    if request.echo["store"]:
        stored = sb.store.responses
        stored[response["id"]] = {
            "id": response["id"],
            "scope": account.scope,
            "response": response,
            "input_items": [dict(item, id=request_id("msg_")) for item in request.input_items],
            "conversation": [*history, *request.input_messages, ("assistant", text)],
        }
        while len(stored) > MAX_STORED:
            del stored[next(iter(stored))]
    return response


def _visible(sb: Sandbox, req: Request) -> dict[str, Any]:
    return req.owned(sb.store.responses, "Response with id '{id}' not found.")


async def create(sb: Sandbox, req: Request) -> Response | StreamResponse:
    body = req.json()
    response = create_response(sb, req.account, body)
    if body.get("stream"):
        return StreamResponse(stream_events(response), usage=response["usage"])
    return Response(response)


async def retrieve(sb: Sandbox, req: Request) -> Response | StreamResponse:
    response = _visible(sb, req)["response"]
    if req.query.get("stream") == "true":
        start = req.int_query("starting_after", -1)
        return StreamResponse(stream_events(response, starting_after=start))
    return Response(response)


async def delete(sb: Sandbox, req: Request) -> Response:
    record = _visible(sb, req)
    del sb.store.responses[record["id"]]
    return Response({"id": record["id"], "object": "response", "deleted": True})


async def cancel(sb: Sandbox, req: Request) -> Response:
    _visible(sb, req)
    raise bad_request("Only responses created with background=true can be cancelled.")


async def list_input_items(sb: Sandbox, req: Request) -> Response:
    return Response(req.page(_visible(sb, req)["input_items"], 20, 100, ordered=True))


async def count_input_tokens(sb: Sandbox, req: Request) -> Response:
    body = req.json()
    _, card = check_model_access(sb, req.account, body.get("model"))
    counted = {k: v for k, v in body.items() if k in ("input", "instructions", "reasoning")}
    history = _history(sb, req.account, body)
    request = parse_responses_request(
        {**counted, "previous_response_id": body.get("previous_response_id")}, card, history
    )
    tokens = prompt_tokens(request.chat.messages)
    return Response({"object": "response.input_tokens", "input_tokens": tokens})
