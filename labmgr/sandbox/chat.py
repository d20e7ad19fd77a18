"""`/v1/chat/completions`, `/v1/completions` and `/v1/models`: which models a caller may use
(the catalogue and its own fine-tunes), the simulator call and its usage."""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.behaviour import CATALOGUE, Completion, ModelCard, served_model_name
from labmgr.sandbox.behaviour.request import check_stream_options
from labmgr.sandbox.errors import APIError, bad_request, model_not_found
from labmgr.sandbox.protocol import Request, Response, StreamResponse
from labmgr.sandbox.store import request_id
from labmgr.sandbox.streaming import stream_frames

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox


def check_model_access(sb: Sandbox, account: Account, model: Any) -> tuple[str, ModelCard]:
    """`model` and its base model's card when `account` may call it (a catalogue model or one
    of its own fine-tunes that the simulator serves), else the real API's 400 or 404."""
    if not isinstance(model, str) or not model:
        raise bad_request("you must provide a model parameter", param="model")
    visible = model in CATALOGUE or sb.model_record(model, account) is not None
    card = sb.simulator.card(model) if visible else None
    if card is None:
        raise model_not_found(model)
    return model, card


Access = Callable[["Sandbox", Account, Any], tuple[str, ModelCard]]
"""Which model serves a request's `model` for an account (or an APIError)."""


def _complete(
    sb: Sandbox, model: str, body: dict[str, Any], endpoint: str = "chat.completions"
) -> Completion:
    completion = sb.simulator.complete(model, body, legacy=endpoint == "completions")
    usage = completion.usage
    tokens = (usage["prompt_tokens"], usage["completion_tokens"])
    sb.stats.usage(model, len(completion.choices), *tokens, endpoint)
    return completion


def run_chat(
    sb: Sandbox, account: Account, body: dict[str, Any], access: Access = check_model_access
) -> dict[str, Any]:
    model, _ = access(sb, account, body.get("model"))
    completion = _complete(sb, model, body)
    return {
        "id": request_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served_model_name(model),
        "choices": completion.choices,
        "usage": completion.usage,
        "service_tier": "default",
        "system_fingerprint": completion.system_fingerprint,
    }


def run_legacy_completion(
    sb: Sandbox, account: Account, body: dict[str, Any], access: Access = check_model_access
) -> dict[str, Any]:
    """The `text_completion` object for a `/v1/completions` body (prompt as one user message)."""
    model, _ = access(sb, account, body.get("model"))
    prompt = body.get("prompt")
    prompts = prompt if isinstance(prompt, list) else [prompt]
    if not prompts or not all(isinstance(p, str) for p in prompts):
        raise bad_request(
            "Invalid 'prompt': expected a string or a list of strings.", param="prompt"
        )
    top = body.get("logprobs")
    if top is not None and (not isinstance(top, int) or isinstance(top, bool) or not 0 <= top <= 5):
        raise bad_request("Invalid 'logprobs': expected an integer from 0 to 5.", param="logprobs")
    choices: list[dict[str, Any]] = []
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    fingerprint = None
    for text in prompts:
        chat_body = {k: v for k, v in body.items() if k in ("n", "seed", "temperature", "top_p")}
        chat_body["messages"] = [{"role": "user", "content": text}]
        chat_body["max_tokens"] = body.get("max_tokens", 16)
        if top is not None:
            chat_body.update(logprobs=True, top_logprobs=top)
        completion = _complete(sb, model, chat_body, "completions")
        fingerprint = completion.system_fingerprint
        for key in totals:
            totals[key] += completion.usage[key]
        for choice in completion.choices:
            logprobs = _legacy_logprobs(choice["logprobs"]) if top is not None else None
            text = choice["message"]["content"]
            finish = choice["finish_reason"]
            entry = {"index": len(choices), "text": text, "finish_reason": finish}
            choices.append(entry | {"logprobs": logprobs})
    return {
        "id": request_id("cmpl-"),
        "object": "text_completion",
        "created": int(time.time()),
        "model": served_model_name(model),
        "choices": choices,
        "usage": totals,
        "system_fingerprint": fingerprint,
    }


def _legacy_logprobs(logprobs: Any) -> dict[str, Any]:
    tokens = (logprobs or {}).get("content") or []
    offsets = accumulate((len(t["token"]) for t in tokens), initial=0)
    return {
        "tokens": [t["token"] for t in tokens],
        "token_logprobs": [t["logprob"] for t in tokens],
        "top_logprobs": [
            {x["token"]: x["logprob"] for x in t.get("top_logprobs", [])} for t in tokens
        ],
        "text_offset": list(offsets)[: len(tokens)],
    }


async def create(
    sb: Sandbox, req: Request, access: Access = check_model_access
) -> Response | StreamResponse:
    """`POST /chat/completions`; `access` says which models the caller may ask."""
    body = req.json()
    check_stream_options(body)
    response = run_chat(sb, req.account, body, access)
    if body.get("stream"):
        options = body.get("stream_options") or {}
        frames = stream_frames(response, bool(options.get("include_usage")))
        return StreamResponse(frames, usage=response["usage"])
    return Response(response)


async def create_legacy(sb: Sandbox, req: Request, access: Access = check_model_access) -> Response:
    body = req.json()
    if body.get("stream"):
        raise bad_request("The sandbox does not stream legacy completions.", param="stream")
    return Response(run_legacy_completion(sb, req.account, body, access))


def _model_view(model: ModelCard | dict[str, Any]) -> dict[str, Any]:
    fields = model if isinstance(model, dict) else vars(model)
    return {"id": fields["id"], "object": "model"} | {k: fields[k] for k in ("created", "owned_by")}


async def list_models(sb: Sandbox, req: Request) -> Response:
    sb.settle()
    data = [_model_view(card) for card in CATALOGUE.values()]
    scope = req.account.scope
    data += [_model_view(r) for r in sb.store.models.values() if r["scope"] == scope]
    return Response({"object": "list", "data": data})


async def retrieve_model(sb: Sandbox, req: Request) -> Response:
    model = req.params[0]
    found = CATALOGUE.get(model) or sb.model_record(model, req.account)
    if found is None:
        raise model_not_found(model)
    return Response(_model_view(found))


async def delete_model(sb: Sandbox, req: Request) -> Response:
    model = req.params[0]
    if model in CATALOGUE:
        message = (
            f"You have insufficient permissions to delete the model `{model}`: only fine-tuned "
            "models of your organization can be deleted."
        )
        raise APIError(403, message, code="insufficient_permissions")
    record = sb.model_record(model, req.account)
    if record is None:
        raise model_not_found(model)
    del sb.store.models[model]
    sb.store.deleted_models.add(model)
    sb.store.save()
    return Response({"id": model, "object": "model", "deleted": True})
