"""``accounts.json``: which organization/project each key belongs to, keyed by fingerprint.

The file holds SHA-256 fingerprints of (base URL, key), env var names and ids; never a key.
Writes are atomic (temp file + rename) under a file lock, so processes can share a lab.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from labmgr.accounts._json_file import LockedJsonFile

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
        self._file = LockedJsonFile(path, _CacheFile)

    def _read(self) -> _CacheFile:
        return self._file.read()  # missing, unreadable or damaged: looked up again

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
        self._file.update(lambda data: data.keys.__setitem__(fingerprint, entry))
