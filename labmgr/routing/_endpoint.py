"""Which endpoint (base URL + API key) serves a model: `Endpoint`, the `ClientRouter` protocol,
`EnvRouter` (routing from the environment alone), and the rule both routers use for Tinker."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from labmgr.capabilities import TINKER_MODEL_PATTERNS, is_tinker_checkpoint
from labmgr.errors import LabmgrError

DEFAULT_BASE_URL = "https://api.openai.com/v1"  # as `labmgr.accounts`, which loads on first use
NO_TINKER_KEY_HINT = (
    "Tinker's models (tinker://… checkpoints, base models such as Qwen/Qwen3-8B) are "
    "served with a Tinker key: export TINKER_API_KEY (or TINKER_API_KEY_<NAME>); "
    "TINKER_BASE_URL points at another Tinker server."
)


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


def goes_to_tinker(
    model: str,
    patterns: Sequence[str],
    *,
    has_key: Callable[[], bool],
    fallback_url: Callable[[], str],
) -> bool:
    """Whether `model` is Tinker's: a checkpoint (``tinker://…``) always; an id matching
    `patterns` (``Qwen/Qwen3-8B``, …) when a Tinker key is set (`has_key()`, asked only then),
    or when it would otherwise go to `fallback_url` = OpenAI's API, which never serves them
    (so TINKER_API_KEY is named)."""
    if is_tinker_checkpoint(model):
        return True
    if not any(fnmatch.fnmatchcase(model, pattern) for pattern in patterns):
        return False
    return has_key() or fallback_url().rstrip("/") == DEFAULT_BASE_URL


def _env_key(name: str) -> Callable[[], str]:
    """Reads the key in the environment variable `name` when called."""

    def key() -> str:
        value = os.environ.get(name, "").strip()
        if not value:
            raise NoEndpointError(f"no API key: set the environment variable {name}")
        return value

    return key


class EnvRouter:
    """Every model on one endpoint: `base_url` (else `OPENAI_BASE_URL`, else OpenAI's) with
    the key in the environment variable `key_env`; Tinker's models on Tinker's endpoint
    (`TINKER_BASE_URL`, the first of `TINKER_API_KEY`, `TINKER_API_KEY_*`), one sample per
    request."""

    def __init__(self, *, base_url: str | None = None, key_env: str = "OPENAI_API_KEY") -> None:
        self.key_env = key_env
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    def endpoint_for(self, model: str) -> Endpoint:
        from labmgr.accounts import tinker_key_envs

        if goes_to_tinker(
            model,
            TINKER_MODEL_PATTERNS,
            has_key=lambda: bool(tinker_key_envs()),
            fallback_url=lambda: self.base_url,
        ):
            return _tinker_endpoint(model, tinker_key_envs())
        if not self.base_url.startswith(("http://", "https://")):
            raise NoEndpointError(
                f"the base URL {self.base_url!r} must start with http:// or https://",
                hint="Fix OPENAI_BASE_URL (or the router's base_url), e.g. "
                "http://127.0.0.1:8000/v1.",
            )
        key = _env_key(self.key_env)
        key()
        return Endpoint(base_url=self.base_url, key_name=self.key_env, api_key=key)


def _tinker_endpoint(model: str, key_envs: Sequence[str]) -> Endpoint:
    from labmgr.accounts import tinker_base_url

    if not key_envs:
        raise NoEndpointError(
            f"no API key for {model}: set the environment variable TINKER_API_KEY",
            hint=NO_TINKER_KEY_HINT,
        )
    try:
        base_url = tinker_base_url()
    except LabmgrError as error:
        raise NoEndpointError(error.message, hint=error.hint) from None
    return Endpoint(
        base_url=base_url,
        key_name=key_envs[0],
        api_key=_env_key(key_envs[0]),
        supports_n=False,
        lists_models=False,
    )
