"""Which endpoint (base URL + API key) serves a model: `Endpoint` and the `ClientRouter`
protocol."""

from __future__ import annotations

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
    lists_models: bool = True
    """Whether `GET /models/{id}` says if a model exists (Tinker's endpoint has no such route:
    its models are not looked up before a run)."""

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
