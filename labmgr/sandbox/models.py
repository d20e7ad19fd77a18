"""`/v1/models`: the catalogue plus the caller's fine-tuned models; delete fine-tunes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from labmgr.sandbox.behaviour import CATALOGUE, ModelCard
from labmgr.sandbox.errors import APIError, model_not_found
from labmgr.sandbox.protocol import Request, Response

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox


def _view(model: ModelCard | dict[str, Any]) -> dict[str, Any]:
    fields = model if isinstance(model, dict) else vars(model)
    return {"id": fields["id"], "object": "model"} | {k: fields[k] for k in ("created", "owned_by")}


async def list_models(sb: Sandbox, req: Request) -> Response:
    sb.settle()
    data = [_view(card) for card in CATALOGUE.values()]
    scope = req.account.scope
    data += [_view(r) for r in sb.store.models.values() if r["scope"] == scope]
    return Response({"object": "list", "data": data})


async def retrieve(sb: Sandbox, req: Request) -> Response:
    model = req.params[0]
    card = CATALOGUE.get(model)
    if card is not None:
        return Response(_view(card))
    record = sb.model_record(model, req.account)
    if record is None:
        raise model_not_found(model)
    return Response(_view(record))


async def delete(sb: Sandbox, req: Request) -> Response:
    model = req.params[0]
    if model in CATALOGUE:
        raise APIError(
            403,
            f"You have insufficient permissions to delete the model `{model}`: only fine-tuned "
            "models of your organization can be deleted.",
            code="insufficient_permissions",
        )
    record = sb.model_record(model, req.account)
    if record is None:
        raise model_not_found(model)
    del sb.store.models[model]
    sb.store.deleted_models.add(model)
    sb.store.save()
    return Response({"id": model, "object": "model", "deleted": True})
