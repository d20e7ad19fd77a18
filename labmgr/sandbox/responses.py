"""`/v1/responses`: create (plain or streamed), retrieve, delete, input items, token counts.
Stored responses are scoped like files and live in memory only."""

from __future__ import annotations

import base64
import json
import time
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.behaviour import Completion, prompt_tokens, served_model_name
from labmgr.sandbox.chat import check_model_access
from labmgr.sandbox.errors import bad_request, wrong_type
from labmgr.sandbox.protocol import Request, Response, StreamResponse
from labmgr.sandbox.responses_request import (
    ENCRYPTED_REASONING,
    LOGPROBS,
    Messages,
    ResponsesRequest,
    parse_responses_request,
)
from labmgr.sandbox.store import request_id
from labmgr.sandbox.streaming import stream_events

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox


MAX_STORED = 10_000
"""Stored responses kept in memory; the oldest are forgotten first."""


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


def _summary_text(messages: Messages) -> str:
    """A reasoning summary naming what the last user message asks (model output: plain)."""
    question = next((t for r, t in reversed(messages) if r == "user" and t.strip()), "")
    words = question.split()
    topic = " ".join(words[:12]) + (" …" if len(words) > 12 else "")
    return f"**Answering the request**\n\nThe user asks: {topic}\nI will answer directly."


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
        if request.reasoning_summary and spent:
            summary = _summary_text(request.chat.messages)
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


def _usage(completion: Completion) -> dict[str, Any]:
    usage = completion.usage
    prompt, output = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
    reasoning = int(usage["completion_tokens_details"]["reasoning_tokens"])
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt + output,
    }


def create_response(sb: Sandbox, account: Account, body: dict[str, Any]) -> dict[str, Any]:
    """Answer one `/v1/responses` body (a request's, or a Batch API line's): the response
    object, stored when `store` says so."""
    model, card = check_model_access(sb, account, body.get("model"))
    history = _history(sb, account, body)
    request = parse_responses_request(body, card, history)
    completion = sb.simulator.answer(model, request.chat)
    usage = _usage(completion)
    sb.stats.usage(model, 1, usage["input_tokens"], usage["output_tokens"], "responses.create")
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
        "usage": usage,
        "max_tool_calls": None,
        **request.echo,
    }
    if request.store:
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
