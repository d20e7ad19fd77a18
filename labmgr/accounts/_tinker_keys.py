"""Checking a Tinker key: Tinker's OpenAI-compatible endpoint lists no models, so the key is
sent where the `tinker` SDK sends it first, ``GET {service}/api/v1/get_server_capabilities``
with ``X-API-Key``. A Tinker key has no organization or project."""

from __future__ import annotations

from labmgr.accounts._credentials import TINKER_OAI_PATH, Credential
from labmgr.errors import CredentialCheckFailed, scrub_keys


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
