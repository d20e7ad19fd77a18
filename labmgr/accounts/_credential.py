"""`Credential`: which key (named by its env var) to use where; the key stays in the env."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace

from labmgr.errors import MissingApiKey

OPENAI_ENDPOINT = "openai"
"""Name of the built-in OpenAI endpoint (keys ``OPENAI_API_KEY``, ``OPENAI_API_KEY_*``)."""
OPENROUTER_ENDPOINT = "openrouter"
"""Name of the built-in OpenRouter endpoint (keys ``OPENROUTER_API_KEY*``)."""


@dataclass(frozen=True)
class Credential:
    """One API key of one endpoint, named by the env var that holds it: the key is read when
    a client is built (`api_key`), never stored, so a `Credential` can be printed safely."""

    endpoint: str
    """Endpoint name: ``openai``, ``openrouter`` or a name from ``[endpoints.NAME]``."""
    base_url: str
    key_env: str
    """Name of the environment variable holding the key."""
    organization: str | None = None
    """Organization id the key belongs to (``openai-organization`` header), once resolved."""
    project: str | None = None
    """Project id the key belongs to (``openai-project`` header), once resolved."""
    resolved: bool = False
    """True once organization/project were looked up (they may still be None, e.g. OpenRouter)."""

    def api_key(self) -> str:
        """The key itself, read from the environment now. Never store or print it."""
        value = os.environ.get(self.key_env, "").strip()
        if not value:
            raise MissingApiKey(
                f"The environment variable {self.key_env} (API key of endpoint "
                f"{self.endpoint!r}) is not set.",
                hint=f"Set {self.key_env} in the environment; `labmgr keys` lists the keys found.",
            )
        return value

    def fingerprint(self) -> str:
        """SHA-256 of base URL and key: identifies the key in caches without revealing it."""
        digest = hashlib.sha256(f"{self.base_url}\n{self.api_key()}".encode())
        return digest.hexdigest()

    def with_identity(self, organization: str | None, project: str | None) -> Credential:
        """A copy marked resolved, with the given organization and project."""
        return replace(self, organization=organization, project=project, resolved=True)
