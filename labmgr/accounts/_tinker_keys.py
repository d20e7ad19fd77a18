"""Tinker keys: their variables (`key_env_name`), reading one (`tinker_key`) and checking
one. Tinker's OpenAI-compatible endpoint lists no models, so a key is checked where the
`tinker` SDK sends it first, ``GET {service}/api/v1/get_server_capabilities`` with
``X-API-Key``. A Tinker key has no organization or project."""

from __future__ import annotations

import os

from labmgr.accounts._credentials import TINKER_KEY_ENV, TINKER_OAI_PATH, Credential
from labmgr.errors import CredentialCheckFailed, MissingApiKey, scrub_keys


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


def check_tinker_key(credential: Credential, timeout: float) -> None:
    """Raises `CredentialCheckFailed` (naming the env var, never the key), `MissingApiKey`."""
    import httpx  # only when a key is checked over the network

    secret = credential.api_key()
    service = credential.base_url.removesuffix(TINKER_OAI_PATH)
    where = f"{credential.key_env} at {service}"
    try:
        response = httpx.get(
            f"{service}/api/v1/get_server_capabilities",
            headers={"X-API-Key": secret},
            timeout=timeout,
        )
    except httpx.HTTPError as exc:
        kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "could not connect"
        raise CredentialCheckFailed(
            f"Checking {where} failed: {kind}.",
            hint="Is Tinker up and TINKER_BASE_URL right (unset for Tinker's own service)?",
        ) from None
    if response.status_code >= 400:
        detail = scrub_keys(response.text[:200], secret).strip() or response.reason_phrase
        raise CredentialCheckFailed(
            f"Checking {where} failed: HTTP {response.status_code}: {detail}",
            hint="Check that it is a Tinker key (tml-…); `labmgr keys` lists them.",
        )
