"""Tinker's OpenAI-compatible endpoint (`/tinker/oai/api/v1`): chat and legacy completions
for base models and sampler checkpoints, answered by the sandbox's chat handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from labmgr.sandbox.behaviour.request import check_stream_options
from labmgr.sandbox.chat import run_chat, run_legacy_completion
from labmgr.sandbox.errors import bad_request
from labmgr.sandbox.protocol import Request, Response, StreamResponse
from labmgr.sandbox.streaming import stream_frames

if TYPE_CHECKING:
    from .service import TinkerService

__all__ = ["ROUTES"]


async def chat_completions(svc: TinkerService, req: Request) -> Response | StreamResponse:
    body = req.json()
    check_stream_options(body)
    response = run_chat(svc.sb, req.account, body, svc.served_model)
    if body.get("stream"):
        options = body.get("stream_options") or {}
        frames = stream_frames(response, bool(options.get("include_usage")))
        return StreamResponse(frames, usage=response["usage"])
    return Response(response)


async def completions(svc: TinkerService, req: Request) -> Response:
    body = req.json()
    if body.get("stream"):
        raise bad_request("The sandbox does not stream legacy completions.", param="stream")
    return Response(run_legacy_completion(svc.sb, req.account, body, svc.served_model))


ROUTES: list[tuple[str, str, str, Any]] = [
    ("POST", "/oai/api/v1/chat/completions", "oai.chat.completions", chat_completions),
    ("POST", "/oai/api/v1/completions", "oai.completions", completions),
]
