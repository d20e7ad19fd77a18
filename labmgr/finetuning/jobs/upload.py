"""Uploading a training file once per organization/project (by md5, re-checked with a retrieve)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import openai
from openai import OpenAI

from jobs_db import Database, TrainingFile, find_file, upsert_file
from labmgr.accounts import Credential
from labmgr.finetuning.errors import FineTuningApiError, api_message

__all__ = ["ensure_uploaded", "file_md5"]


def file_md5(path: Path) -> str:
    """Hex md5 of the file's bytes (read in chunks)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "md5").hexdigest()


def _still_there(client: OpenAI, file_id: str) -> bool:
    try:
        remote = client.files.retrieve(file_id)
    except openai.NotFoundError:
        return False
    return remote.status != "error"


def ensure_uploaded(
    db: Database,
    client: OpenAI,
    credential: Credential,
    path: Path,
    *,
    md5: str,
    num_examples: int | None = None,
) -> tuple[TrainingFile, bool]:
    """The uploaded file with this content in the key's organization/project; True if new.

    A file recorded earlier is reused only if ``files.retrieve`` still finds it (it may have
    been deleted, or belong to another project); otherwise the file is uploaded again.
    """
    known = find_file(
        db, md5, credential.organization, credential.project, endpoint=credential.base_url
    )
    if known is not None and _still_there(client, known.id):
        return known, False
    try:
        remote = client.files.create(file=(path.name, path.read_bytes()), purpose="fine-tune")
    except openai.APIStatusError as exc:
        raise FineTuningApiError(
            f"Uploading {path} with {credential.key_env} failed: HTTP {exc.status_code}: "
            f"{api_message(exc)}",
            hint="Check the file with `labmgr finetune validate` and the key with `labmgr keys`.",
        ) from None
    except openai.APIConnectionError:
        raise FineTuningApiError(
            f"Uploading {path} failed: could not reach {credential.base_url}.",
            hint="Check the network and the endpoint's base URL, then try again.",
        ) from None
    record = TrainingFile(
        id=remote.id,
        organization_id=credential.organization,
        project_id=credential.project,
        key_env=credential.key_env,
        endpoint=credential.base_url,
        local_path=str(path.resolve()),
        filename=path.name,
        md5=md5,
        size_bytes=remote.bytes,
        num_examples=num_examples,
        purpose="fine-tune",
        created_at=datetime.fromtimestamp(remote.created_at, UTC),
        uploaded_at=datetime.now(UTC),
    )
    upsert_file(db, record)
    return record, True
