"""``shared_models.json``: which key can use each fine-tune the lab's database does not know
(a model shared by another organization), found by asking each key once.

An entry names the key by its env var and the SHA-256 fingerprint of (base URL, key), never
the key: when the variable later holds another key, the model is looked up again.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from labmgr.accounts import LockedJsonFile

if TYPE_CHECKING:
    from labmgr.accounts import Credential

__all__ = ["SharedModel", "SharedModels"]


class SharedModel(BaseModel):
    """The key found to serve a fine-tune, and when."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    endpoint: str
    """Endpoint name of the key (``openai``, ``openrouter`` or a configured one)."""
    base_url: str
    """Base URL the model was found at."""
    key_env: str
    """Env var that held the key."""
    fingerprint: str
    """SHA-256 of base URL and key (identifies the key without revealing it)."""
    found_at: datetime
    """When the model was found."""


class _File(BaseModel):
    version: int = 1
    models: dict[str, SharedModel] = {}


class SharedModels:
    """Read and update ``shared_models.json`` in a lab folder."""

    def __init__(self, path: Path) -> None:
        self._file = LockedJsonFile(path, _File)

    def get(self, model: str) -> SharedModel | None:
        """The key remembered for `model`, if any."""
        return self._file.read().models.get(model)

    def all(self) -> dict[str, SharedModel]:
        """Every remembered model, by id."""
        return dict(self._file.read().models)

    def put(self, model: str, credential: Credential) -> SharedModel:
        """Remember the key that serves `model`; a lab that cannot be written is not an
        error (the next process asks again)."""
        entry = SharedModel(
            endpoint=credential.endpoint,
            base_url=credential.base_url,
            key_env=credential.key_env,
            fingerprint=credential.fingerprint(),
            found_at=datetime.now(UTC),
        )
        with contextlib.suppress(OSError):
            self._file.update(lambda data: data.models.__setitem__(model, entry))
        return entry
