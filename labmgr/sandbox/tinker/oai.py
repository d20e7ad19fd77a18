"""Tinker's OpenAI-compatible endpoint (`/tinker/oai/api/v1`): chat and legacy completions
for base models and sampler checkpoints, answered by the sandbox's chat handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from labmgr.sandbox.chat import create, create_legacy
from labmgr.sandbox.protocol import Request, Response, StreamResponse

if TYPE_CHECKING:
    from .service import TinkerService

__all__ = ["ROUTES"]


async def chat_completions(svc: TinkerService, req: Request) -> Response | StreamResponse:
    return await create(svc.sb, req, svc.served_model)


async def completions(svc: TinkerService, req: Request) -> Response:
    return await create_legacy(svc.sb, req, svc.served_model)


ROUTES: list[tuple[str, str, str, Any]] = [
    ("POST", "/oai/api/v1/chat/completions", "oai.chat.completions", chat_completions),
    ("POST", "/oai/api/v1/completions", "oai.completions", completions),
]
