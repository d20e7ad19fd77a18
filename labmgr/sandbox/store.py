"""The sandbox's records (JSON-ready dicts with the ``org-id/project-id`` `scope` that owns
them) and their persistence: `state.json` (replaced atomically) and contents under `blobs/`."""

from __future__ import annotations

import itertools
import json
import os
import random
import string
import tempfile
from pathlib import Path
from typing import Any

_ALPHABET = string.ascii_letters + string.digits
_random = random.SystemRandom()
STATE_VERSION = 3
_COLLECTIONS = ("files", "jobs", "batches", "models")


def new_id(prefix: str, length: int = 24) -> str:
    return prefix + "".join(_random.choices(_ALPHABET, k=length))


_SALT = f"{_random.getrandbits(40):010x}"
_COUNTER = itertools.count(1)


def request_id(prefix: str) -> str:
    """A cheap unique id for per-request objects (`req_…`): salt + counter."""
    return f"{prefix}{_SALT}{next(_COUNTER):014x}"


class Store:
    """In-memory collections, mirrored to `state_dir` when one is given."""

    def __init__(self, state_dir: str | Path | None = None) -> None:
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.files: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.models: dict[str, dict[str, Any]] = {}
        """Fine-tuned models (finals and checkpoints) that exist, by id."""
        self.deleted_models: set[str] = set()
        self.responses: dict[str, dict[str, Any]] = {}
        """Stored Responses API responses, by id, oldest first; kept in memory only."""
        self._blobs: dict[str, bytes] = {}
        if self.state_dir is not None:
            self._load()

    def put_blob(self, name: str, content: bytes) -> None:
        self._blobs[name] = content
        if self.state_dir is not None:
            atomic_write(self.state_dir / "blobs" / name, content)

    def blob(self, name: str) -> bytes | None:
        content = self._blobs.get(name)
        if content is None and self.state_dir is not None:
            path = self.state_dir / "blobs" / name
            if path.exists():
                content = self._blobs[name] = path.read_bytes()
        return content

    def drop_blob(self, name: str) -> None:
        self._blobs.pop(name, None)
        if self.state_dir is not None:
            (self.state_dir / "blobs" / name).unlink(missing_ok=True)

    def save(self) -> None:
        """Write the records atomically (blobs are written as they arrive)."""
        if self.state_dir is None:
            return
        state = {"version": STATE_VERSION, "deleted_models": sorted(self.deleted_models)}
        state |= {name: getattr(self, name) for name in _COLLECTIONS}
        atomic_write(self.state_dir / "state.json", json.dumps(state).encode())

    def _load(self) -> None:
        assert self.state_dir is not None
        self.state_dir.mkdir(parents=True, exist_ok=True)
        path = self.state_dir / "state.json"
        if not path.exists():
            return
        try:
            state = json.loads(path.read_bytes())
        except ValueError as exc:
            raise ValueError(
                f"sandbox state file {path} is not valid JSON ({exc}); move it away to start "
                "with an empty state"
            ) from exc
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"sandbox state file {path} has version {state.get('version')!r}, expected "
                f"{STATE_VERSION}; move it away to start with an empty state"
            )
        for name in _COLLECTIONS:
            setattr(self, name, state[name])
        self.deleted_models = set(state["deleted_models"])

    def visible(self, collection: dict[str, dict[str, Any]], object_id: str, scope: str):
        record = collection.get(object_id)
        return record if record is not None and record["scope"] == scope else None


def atomic_write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
