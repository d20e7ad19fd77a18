"""``shared_models.json``: which key can use each fine-tune the lab's database does not know
(a model shared by another organization), found by asking each key once. An entry names the
key by env var and fingerprint: when the variable later holds another key, the model is
looked up again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from labmgr.accounts import RecordFile


class SharedModel(BaseModel):
    """The key found to serve a fine-tune, and when."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    endpoint: str
    """Endpoint name of the key (``openai``, ``openrouter`` or a configured one)."""
    base_url: str
    key_env: str
    fingerprint: str
    """SHA-256 of base URL and key (identifies the key without revealing it)."""
    found_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class SharedModels(RecordFile[SharedModel]):
    """``shared_models.json`` in a lab folder."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "models", SharedModel)
