"""`/v1/files`: multipart upload, list, retrieve, content, delete."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.datastructures import UploadFile
from starlette.requests import Request as StarletteRequest

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.errors import bad_request, wrong_type
from labmgr.sandbox.protocol import Request, Response
from labmgr.sandbox.store import new_id

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox


UPLOAD_PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
BATCH_FILE_LIFETIME = 30 * 24 * 3600


def create_file(
    sb: Sandbox,
    *,
    scope: str,
    filename: str,
    purpose: str,
    content: bytes,
    created_at: float | None = None,
    expires_at: int | None = None,
) -> dict[str, Any]:
    """Store a file (uploaded or produced by a job or batch) and return its record."""
    record: dict[str, Any] = {
        "id": new_id("file-", 22),
        "object": "file",
        "bytes": len(content),
        "created_at": int(created_at if created_at is not None else sb.now()),
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
        "scope": scope,
    }
    if expires_at is not None:
        record["expires_at"] = expires_at
    sb.store.put_blob(record["id"], content)
    sb.store.files[record["id"]] = record
    sb.store.save()
    return record


def file_param(
    sb: Sandbox, account: Account, body: dict[str, Any], name: str, purpose: str
) -> str | None:
    """The id in `body[name]` of a file of `account` uploaded for `purpose` (None if absent),
    else the real API's 400."""
    file_id = body.get(name)
    if file_id is None:
        return None
    if not isinstance(file_id, str):
        raise wrong_type(name, "a string", file_id)
    record = sb.store.visible(sb.store.files, file_id, account.scope)
    if record is None:
        raise bad_request(f"invalid {name}: {file_id}", param=name, code="invalid_file")
    if record["purpose"] != purpose:
        raise bad_request(
            f"File {file_id} has purpose '{record['purpose']}'; {name} needs a file uploaded "
            f"with purpose '{purpose}'.",
            param=name,
        )
    return file_id


def file_view(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "scope"}


async def create(sb: Sandbox, req: Request) -> Response:
    content_type = req.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise bad_request(
            "File uploads must be sent as multipart/form-data with `purpose` and `file` fields."
        )
    form = await StarletteRequest(req.asgi_scope, req.asgi_receive).form(max_part_size=1 << 30)
    try:
        purpose = form.get("purpose")
        upload = form.get("file")
        if not isinstance(purpose, str) or not purpose:
            raise bad_request("Missing required parameter: 'purpose'.", param="purpose")
        if purpose not in UPLOAD_PURPOSES:
            raise bad_request(
                f"'{purpose}' is not one of {list(UPLOAD_PURPOSES)} - 'purpose'", param="purpose"
            )
        if not isinstance(upload, UploadFile):
            raise bad_request("Missing required parameter: 'file'.", param="file")
        content = await upload.read()
        filename = upload.filename or "upload"
        expires_at = _expiry(
            sb, purpose, form.get("expires_after[anchor]"), form.get("expires_after[seconds]")
        )
    finally:
        await form.close()
    if purpose == "batch" and len(content) > sb.config.batch_max_file_bytes:
        raise bad_request("File is too large.")
    if purpose == "fine-tune" and not filename.endswith(".jsonl"):
        message = f"Invalid file format for Fine-Tuning API. Must be .jsonl (got {filename!r})."
        raise bad_request(message, param="file")
    record = create_file(
        sb,
        scope=req.account.scope,
        filename=filename,
        purpose=purpose,
        content=content,
        expires_at=expires_at,
    )
    return Response(file_view(record))


def _expiry(sb: Sandbox, purpose: str, anchor: Any, seconds: Any) -> int | None:
    now = int(sb.now())
    if anchor is None and seconds is None:
        return now + BATCH_FILE_LIFETIME if purpose == "batch" else None
    if anchor != "created_at":
        raise bad_request("expires_after[anchor] must be 'created_at'.", param="expires_after")
    try:
        value = int(str(seconds))
    except ValueError:
        raise bad_request(
            "expires_after[seconds] must be an integer.", param="expires_after"
        ) from None
    if not 3600 <= value <= 2_592_000:
        message = "expires_after[seconds] must be between 3600 (1 hour) and 2592000 (30 days)."
        raise bad_request(message, param="expires_after")
    return now + value


async def list_files(sb: Sandbox, req: Request) -> Response:
    sb.settle()
    purpose = req.query.get("purpose")
    scope = req.account.scope
    items = [
        file_view(r)
        for r in sb.store.files.values()
        if r["scope"] == scope and (not purpose or r["purpose"] == purpose)
    ]
    return Response(req.page(items, 10_000, 10_000, ordered=True))


async def retrieve(sb: Sandbox, req: Request) -> Response:
    return Response(file_view(req.owned(sb.store.files, "No such File object: {id}", "id")))


async def content(sb: Sandbox, req: Request) -> Response:
    record = req.owned(sb.store.files, "No such File object: {id}", "id")
    data = sb.store.blob(record["id"]) or b""
    return Response(data, content_type="application/octet-stream")


async def delete(sb: Sandbox, req: Request) -> Response:
    record = req.owned(sb.store.files, "No such File object: {id}", "id")
    del sb.store.files[record["id"]]
    sb.store.drop_blob(record["id"])
    sb.store.save()
    return Response({"id": record["id"], "object": "file", "deleted": True})
