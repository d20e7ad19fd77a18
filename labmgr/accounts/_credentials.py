"""API keys in the environment (built-in prefixes plus the lab's named endpoints), each a
`Credential` that names the env var holding it: the key stays in the environment."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from labmgr.errors import ConfigError, MissingApiKey
from labmgr.settings import Settings

OPENAI_ENDPOINT = "openai"
"""Name of the built-in OpenAI endpoint (keys ``OPENAI_API_KEY``, ``OPENAI_API_KEY_*``)."""
OPENROUTER_ENDPOINT = "openrouter"
"""Name of the built-in OpenRouter endpoint (keys ``OPENROUTER_API_KEY*``)."""
TINKER_ENDPOINT = "tinker"
TINKER_KEY_ENV = "TINKER_API_KEY"
"""Name of the built-in Tinker endpoint (keys ``TINKER_API_KEY``, ``TINKER_API_KEY_*``), unless
the lab configures ``[endpoints.tinker]`` itself."""


@dataclass(frozen=True)
class Credential:
    """One API key of one endpoint, named by the env var that holds it: the key is read when
    a client is built (`api_key`), never stored, so a `Credential` can be printed safely."""

    endpoint: str
    """Endpoint name: ``openai``, ``openrouter`` or a name from ``[endpoints.NAME]``."""
    base_url: str
    key_env: str
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


OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
TINKER_DEFAULT_BASE_URL = "https://tinker.thinkingmachines.dev/services/tinker-prod"
"""Tinker's service, as the `tinker` SDK defaults to it (``TINKER_BASE_URL`` replaces it)."""
TINKER_OAI_PATH = "/oai/api/v1"
"""Where Tinker's OpenAI-compatible endpoint sits under its service URL."""


def _env_url(name: str, default: str, example: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"{name} is {value!r}, which does not start with http:// or https:// and a host.",
            hint=f"Write the whole base URL, e.g. {example}.",
        )
    return value.rstrip("/")


def openai_base_url() -> str:
    """``$OPENAI_BASE_URL`` (how the sandbox is selected) or the public API; `ConfigError`
    when the variable holds something other than an http(s) URL with a host."""
    return _env_url(
        "OPENAI_BASE_URL",
        OPENAI_DEFAULT_BASE_URL,
        "https://api.openai.com/v1 or http://127.0.0.1:8000/v1",
    )


def tinker_service_url() -> str:
    """Tinker's service, where the `tinker` SDK goes: ``$TINKER_BASE_URL`` (the SDK's
    variable) or Tinker's own; `ConfigError` for a value that is not an http(s) URL."""
    return _env_url(
        "TINKER_BASE_URL", TINKER_DEFAULT_BASE_URL, f"{TINKER_DEFAULT_BASE_URL} (no /oai part)"
    )


def tinker_base_url() -> str:
    """Tinker's OpenAI-compatible endpoint: the service + ``/oai/api/v1``."""
    return tinker_service_url() + TINKER_OAI_PATH


def tinker_key_envs() -> list[str]:
    """The set variables holding Tinker keys: ``TINKER_API_KEY`` first, then
    ``TINKER_API_KEY_*`` by name."""
    return _key_envs(TINKER_KEY_ENV, set())


def _key_envs(prefix: str, claimed: set[str]) -> list[str]:
    names = [
        name
        for name, value in os.environ.items()
        if (name == prefix or name.startswith(prefix + "_"))
        and value.strip()
        and name not in claimed
    ]
    return sorted(names, key=lambda name: (name != prefix, name))


def discover_credentials(settings: Settings) -> list[Credential]:
    """Every key that is set, unresolved: ``OPENAI_API_KEY``, ``OPENAI_API_KEY_*`` (base URL
    from ``OPENAI_BASE_URL``), ``OPENROUTER_API_KEY*``, ``TINKER_API_KEY*`` (base URL from
    ``TINKER_BASE_URL``; unless the lab configures ``[endpoints.tinker]``), then the lab's
    ``[endpoints.NAME]`` by name. An env var named by a configured endpoint belongs to that
    endpoint only."""
    claimed = {endpoint.key_env for endpoint in settings.endpoints.values()}
    built_in = [(OPENAI_ENDPOINT, openai_base_url, "OPENAI_API_KEY")]
    built_in.append((OPENROUTER_ENDPOINT, lambda: OPENROUTER_BASE_URL, "OPENROUTER_API_KEY"))
    if TINKER_ENDPOINT not in settings.endpoints:
        built_in.append((TINKER_ENDPOINT, tinker_base_url, TINKER_KEY_ENV))
    found = []
    for endpoint_name, base_url, prefix in built_in:
        found += [Credential(endpoint_name, base_url(), n) for n in _key_envs(prefix, claimed)]
    for name, endpoint in sorted(settings.endpoints.items()):
        if os.environ.get(endpoint.key_env, "").strip():
            found.append(Credential(name, endpoint.base_url, endpoint.key_env))
    return found


def unset_endpoint_keys(settings: Settings) -> dict[str, str]:
    """Configured endpoints whose key variable is not set: ``{endpoint: env var name}``."""
    return {
        name: endpoint.key_env
        for name, endpoint in sorted(settings.endpoints.items())
        if not os.environ.get(endpoint.key_env, "").strip()
    }


@dataclass(frozen=True)
class EndpointSummary:
    """An endpoint and the names of the env vars holding its keys (for `labmgr info`)."""

    name: str
    base_url: str
    key_envs: tuple[str, ...]
    """Env vars that hold a key for it (set ones only)."""
    unset_key_env: str | None = None
    """For a configured endpoint whose variable is unset: that variable's name."""
    models: tuple[str, ...] = ()
    """The model patterns a configured endpoint claims (`[endpoints.NAME] models`)."""


def summarize_endpoints(settings: Settings) -> list[EndpointSummary]:
    """Every endpoint with a key, plus configured endpoints whose key variable is unset; the
    built-in ``openai`` endpoint always (with no keys if none are set)."""
    by_endpoint: dict[str, list[Credential]] = {}
    for credential in discover_credentials(settings):
        by_endpoint.setdefault(credential.endpoint, []).append(credential)
    summaries = []
    for name in (OPENAI_ENDPOINT, OPENROUTER_ENDPOINT, TINKER_ENDPOINT):
        if name == TINKER_ENDPOINT and name in settings.endpoints:
            continue  # the lab's own, listed below
        found = by_endpoint.get(name, [])
        if found or name == OPENAI_ENDPOINT:
            base_url = found[0].base_url if found else openai_base_url()
            summaries.append(EndpointSummary(name, base_url, tuple(c.key_env for c in found)))
    unset = unset_endpoint_keys(settings)
    for name, endpoint in sorted(settings.endpoints.items()):
        keys = tuple(c.key_env for c in by_endpoint.get(name, []))
        summaries.append(
            EndpointSummary(name, endpoint.base_url, keys, unset.get(name), tuple(endpoint.models))
        )
    return summaries


def key_env_name(key: str | None) -> str:
    """The env var of a key: TINKER_API_KEY, TINKER_API_KEY_<NAME> for `--key NAME`, or a
    variable named in full."""
    if not key:
        return TINKER_KEY_ENV
    return key if key.startswith(TINKER_KEY_ENV) else f"{TINKER_KEY_ENV}_{key.upper()}"


def tinker_key(key_env: str | None) -> str:
    """The key in `key_env` (None: TINKER_API_KEY); `MissingApiKey` when it is unset or not a
    Tinker key."""
    key_env = key_env or TINKER_KEY_ENV
    value = os.environ.get(key_env, "").strip()
    if not value:
        raise MissingApiKey(
            f"{key_env} is not set: a Tinker job needs a Tinker API key.",
            hint=f"Export {key_env}=tml-… (or choose another with --key NAME).",
        )
    if not value.startswith(("tml-", "eyJ")):
        raise MissingApiKey(
            f"{key_env} does not hold a Tinker API key (they start with 'tml-').",
            hint="Copy the key from the Tinker console.",
        )
    return value
