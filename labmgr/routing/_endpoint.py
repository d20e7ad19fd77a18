"""Which endpoint (base URL + API key) serves a model: `Endpoint`, the `ClientRouter` protocol,
and `EnvRouter` (every model on `OPENAI_API_KEY` / `OPENAI_BASE_URL`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from labmgr.errors import LabmgrError

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class NoEndpointError(LabmgrError, LookupError):
    """No endpoint can serve a model (for instance no API key is configured)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint or "Export the key (or pass a router), then run again.")

    def __str__(self) -> str:
        return self.message  # one line, as a LookupError's would be; the hint is `hint`


@dataclass(frozen=True)
class Endpoint:
    """An API endpoint and the key used on it, named by `key_name` (never printed or stored)."""

    base_url: str
    key_name: str
    api_key: Callable[[], str] = field(repr=False, compare=False, hash=False)
    organization: str | None = None
    project: str | None = None
    supports_n: bool = True
    """Whether several samples of one prompt can come from one request (`n`)."""
    max_n: int = 128
    max_concurrency: int | None = None
    """An upper bound for this endpoint's adaptive concurrency limit (None: the global cap)."""

    @property
    def id(self) -> str:
        """One client per id: base URL, key name and organization/project."""
        return "|".join(
            [self.base_url.rstrip("/"), self.key_name, self.organization or "", self.project or ""]
        )

    @property
    def identity(self) -> str:
        """What the cache key records: the base URL (answers do not depend on the key)."""
        return self.base_url.rstrip("/")


@runtime_checkable
class ClientRouter(Protocol):
    """Routes a model to the endpoint that serves it."""

    def endpoint_for(self, model: str) -> Endpoint:
        """The endpoint for `model`; raises NoEndpointError when there is none."""
        ...


class EnvRouter:
    """Every model on one endpoint: `base_url` (else `OPENAI_BASE_URL`, else OpenAI's) with
    the key in the environment variable `key_env`."""

    def __init__(self, *, base_url: str | None = None, key_env: str = "OPENAI_API_KEY") -> None:
        self.key_env = key_env
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    def _key(self) -> str:
        value = os.environ.get(self.key_env)
        if not value:
            raise NoEndpointError(f"no API key: set the environment variable {self.key_env}")
        return value

    def endpoint_for(self, model: str) -> Endpoint:
        if not self.base_url.startswith(("http://", "https://")):
            raise NoEndpointError(
                f"the base URL {self.base_url!r} must start with http:// or https://",
                hint="Fix OPENAI_BASE_URL (or the router's base_url), e.g. "
                "http://127.0.0.1:8000/v1.",
            )
        self._key()
        return Endpoint(base_url=self.base_url, key_name=self.key_env, api_key=self._key)
