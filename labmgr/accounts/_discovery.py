"""Find API keys in the environment: built-in prefixes plus the lab's named endpoints."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from labmgr.accounts._credential import OPENAI_ENDPOINT, OPENROUTER_ENDPOINT, Credential
from labmgr.errors import ConfigError
from labmgr.settings import Settings

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

_BUILT_IN: tuple[tuple[str, str], ...] = (
    (OPENAI_ENDPOINT, "OPENAI_API_KEY"),
    (OPENROUTER_ENDPOINT, "OPENROUTER_API_KEY"),
)


def check_base_url(url: str, origin: str) -> str:
    """`url` if it is an ``http://`` or ``https://`` URL with a host; else `ConfigError`
    naming `origin` (where the URL came from)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"{origin} is {url!r}, which does not start with http:// or https:// and a host.",
            hint="Write the whole base URL, e.g. https://api.openai.com/v1 or "
            "http://127.0.0.1:8000/v1.",
        )
    return url


def openai_base_url(environ: Mapping[str, str]) -> str:
    """``$OPENAI_BASE_URL`` (how the sandbox is selected) or the public API.

    Raises `ConfigError` when the variable holds something other than an http(s) URL.
    """
    value = environ.get("OPENAI_BASE_URL", "").strip()
    if not value:
        return OPENAI_DEFAULT_BASE_URL
    return check_base_url(value, "OPENAI_BASE_URL").rstrip("/")


def _prefixed(environ: Mapping[str, str], prefix: str, claimed: set[str]) -> list[str]:
    names = [
        name
        for name, value in environ.items()
        if (name == prefix or name.startswith(prefix + "_"))
        and value.strip()
        and name not in claimed
    ]
    return sorted(names, key=lambda name: (name != prefix, name))


def discover_credentials(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> list[Credential]:
    """Every key that is set, unresolved, in a stable order.

    ``OPENAI_API_KEY`` then ``OPENAI_API_KEY_*`` (base URL from ``OPENAI_BASE_URL``), then
    ``OPENROUTER_API_KEY*``, then the lab's ``[endpoints.NAME]`` by name. An env var named
    by a configured endpoint belongs to that endpoint only. Configured endpoints whose
    variable is unset are left out (see `unset_endpoint_keys`).
    """
    env = os.environ if environ is None else environ
    passed = None if environ is None else environ
    claimed = {endpoint.key_env for endpoint in settings.endpoints.values()}
    base_urls = {OPENAI_ENDPOINT: openai_base_url(env), OPENROUTER_ENDPOINT: OPENROUTER_BASE_URL}
    found: list[Credential] = []
    for endpoint, prefix in _BUILT_IN:
        for name in _prefixed(env, prefix, claimed):
            found.append(Credential(endpoint, base_urls[endpoint], name, environ=passed))
    for name, endpoint_config in sorted(settings.endpoints.items()):
        if env.get(endpoint_config.key_env, "").strip():
            found.append(
                Credential(name, endpoint_config.base_url, endpoint_config.key_env, environ=passed)
            )
    return found


def unset_endpoint_keys(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Configured endpoints whose key variable is not set: ``{endpoint: env var name}``."""
    env = os.environ if environ is None else environ
    return {
        name: endpoint.key_env
        for name, endpoint in sorted(settings.endpoints.items())
        if not env.get(endpoint.key_env, "").strip()
    }


@dataclass(frozen=True)
class EndpointSummary:
    """An endpoint and the names of the env vars holding its keys (for `labmgr info`)."""

    name: str
    """Endpoint name."""
    base_url: str
    """Base URL."""
    key_envs: tuple[str, ...]
    """Env vars that hold a key for it (set ones only)."""
    unset_key_env: str | None = None
    """For a configured endpoint whose variable is unset: that variable's name."""
    models: tuple[str, ...] = ()
    """The model patterns a configured endpoint claims (`[endpoints.NAME] models`)."""


def summarize_endpoints(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> list[EndpointSummary]:
    """Every endpoint with a key, plus configured endpoints whose key variable is unset.

    The built-in ``openai`` endpoint is always listed (with no keys if none are set).
    """
    env = os.environ if environ is None else environ
    by_endpoint: dict[str, list[Credential]] = {}
    for credential in discover_credentials(settings, env):
        by_endpoint.setdefault(credential.endpoint, []).append(credential)
    summaries = [
        EndpointSummary(OPENAI_ENDPOINT, openai_base_url(env), ()),
    ]
    if OPENAI_ENDPOINT in by_endpoint:
        found = by_endpoint[OPENAI_ENDPOINT]
        summaries[0] = EndpointSummary(
            OPENAI_ENDPOINT, found[0].base_url, tuple(c.key_env for c in found)
        )
    if OPENROUTER_ENDPOINT in by_endpoint:
        found = by_endpoint[OPENROUTER_ENDPOINT]
        summaries.append(
            EndpointSummary(OPENROUTER_ENDPOINT, found[0].base_url, tuple(c.key_env for c in found))
        )
    unset = unset_endpoint_keys(settings, env)
    for name, endpoint in sorted(settings.endpoints.items()):
        keys = tuple(c.key_env for c in by_endpoint.get(name, []))
        summaries.append(
            EndpointSummary(name, endpoint.base_url, keys, unset.get(name), tuple(endpoint.models))
        )
    return summaries
