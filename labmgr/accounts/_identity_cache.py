"""``accounts.json``: which organization/project each key belongs to, keyed by fingerprint.

The file holds SHA-256 fingerprints of (base URL, key), env var names and ids; never a key.
Writes are atomic (temp file + rename) under a file lock, so processes can share a lab.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, ValidationError

_VERSION = 1


class CachedIdentity(BaseModel):
    """What a key resolved to, and when."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    endpoint: str
    """Endpoint the key was checked against."""
    base_url: str
    """Base URL the key was checked against."""
    key_env: str
    """Env var name that held the key when it was checked (informational)."""
    organization: str | None
    """Organization id from the ``openai-organization`` header, or None."""
    project: str | None
    """Project id from the ``openai-project`` header, or None."""
    checked_at: datetime
    """When the lookup was made."""


class _CacheFile(BaseModel):
    version: int = _VERSION
    keys: dict[str, CachedIdentity] = {}


class IdentityCache:
    """Read and update ``accounts.json`` in a lab folder."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> _CacheFile:
        try:
            return _CacheFile.model_validate_json(self.path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return _CacheFile()  # a missing, unreadable or damaged cache costs a new lookup

    def get(self, fingerprint: str) -> CachedIdentity | None:
        """The cached identity of the key with `fingerprint`, if any."""
        return self._read().keys.get(fingerprint)

    def put(
        self,
        fingerprint: str,
        *,
        endpoint: str,
        base_url: str,
        key_env: str,
        organization: str | None,
        project: str | None,
    ) -> CachedIdentity:
        """Record (or replace) the identity of the key with `fingerprint`.

        A lab folder that cannot be written (read-only, full) is not an error: the entry is
        returned unrecorded, and the next process looks the key up again.
        """
        entry = CachedIdentity(
            endpoint=endpoint,
            base_url=base_url,
            key_env=key_env,
            organization=organization,
            project=project,
            checked_at=datetime.now(UTC),
        )
        with contextlib.suppress(OSError):  # a read-only lab: the next process looks it up
            self._write(fingerprint, entry)
        return entry

    def _write(self, fingerprint: str, entry: CachedIdentity) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            data = self._read()
            data.keys[fingerprint] = entry
            payload = json.dumps(data.model_dump(mode="json"), indent=2, sort_keys=True)
            handle, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".accounts-", text=True)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(payload + "\n")
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
