"""Small JSON files of records by id in a lab folder, shared by processes: ``accounts.json``
and ``shared_models.json``. They hold key fingerprints, env var names and ids, never a key. A
damaged or missing file reads as empty (the caller looks things up again); a record is written
atomically under a file lock, and a lab that cannot be written only skips the record."""

from __future__ import annotations

import contextlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Generic, TypeVar

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

Record = TypeVar("Record", bound=BaseModel)


class RecordFile(Generic[Record]):
    """`path` holding ``{"version": 1, field: {id: record}}``."""

    def __init__(self, path: Path, field: str, record: type[Record]) -> None:
        self.path = path
        self.field = field
        self._records = TypeAdapter(dict[str, record])  # type: ignore[valid-type]

    def all(self) -> dict[str, Record]:
        """Every record by id (none when the file is missing, unreadable or damaged)."""
        try:
            found: dict[str, Record] = self._records.validate_python(
                json.loads(self.path.read_bytes()).get(self.field, {})
            )
        except (OSError, ValueError, ValidationError, AttributeError):
            return {}
        return found

    def get(self, id: str) -> Record | None:
        return self.all().get(id)

    def put(self, id: str, record: Record) -> Record:
        """Record (or replace) `id`; a folder that cannot be written is not an error."""
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.path) + ".lock"):
                records = {**self.all(), id: record}
                data = {"version": 1, self.field: self._records.dump_python(records, mode="json")}
                tmp = self.path.with_name(f".{self.path.name}.tmp")  # one writer: the lock's
                tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
                os.replace(tmp, self.path)
        return record


class CachedIdentity(BaseModel):
    """What a key resolved to (``openai-organization`` and ``openai-project``), and when."""

    model_config = ConfigDict(frozen=True)

    endpoint: str
    base_url: str
    key_env: str
    organization: str | None
    project: str | None
    checked_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class SharedModel(BaseModel):
    """The key found to serve a fine-tune the lab's database does not know, and when. When
    the env var later holds another key (another fingerprint), the model is looked up again."""

    model_config = ConfigDict(frozen=True)

    endpoint: str
    base_url: str
    key_env: str
    fingerprint: str
    found_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def identity_cache(path: Path) -> RecordFile[CachedIdentity]:
    """``accounts.json``: each key's organization/project, by key fingerprint."""
    return RecordFile(path, "keys", CachedIdentity)


def shared_models(path: Path) -> RecordFile[SharedModel]:
    """``shared_models.json``: the key found for each shared fine-tune, by model."""
    return RecordFile(path, "models", SharedModel)
