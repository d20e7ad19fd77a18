"""`Accounts`: the keys of a lab, and which organization/project each belongs to. A Tinker key
has neither; it is checked where the `tinker` SDK sends it first (its OpenAI-compatible
endpoint lists no models): ``GET {service}/api/v1/get_server_capabilities`` with ``X-API-Key``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from labmgr.accounts._credentials import (
    OPENAI_ENDPOINT,
    TINKER_ENDPOINT,
    TINKER_OAI_PATH,
    Credential,
    discover_credentials,
)
from labmgr.accounts._pool import ClientPool
from labmgr.accounts._records import CachedIdentity, identity_cache
from labmgr.errors import CredentialCheckFailed, LabmgrError, MissingApiKey, scrub_keys
from labmgr.settings import Settings


@dataclass(frozen=True)
class KeyStatus:
    """One key as `labmgr keys` shows it: the credential, or why it could not be checked, and
    whether its identity came from ``accounts.json`` without a request."""

    credential: Credential
    error: str | None = None
    cached: bool = False


class Accounts:
    """The keys found for a lab, resolved lazily to their organization and project: one
    ``GET /models`` per key reads the ``openai-organization`` and ``openai-project`` headers,
    cached in the lab's ``accounts.json`` by key fingerprint for later processes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pool = ClientPool(settings)
        self._cache = identity_cache(settings.accounts_path)
        self._identities = self._cache.all()  # read once; `resolve` adds what it looks up
        self._credentials = discover_credentials(settings)

    def close(self) -> None:
        self.pool.close()

    @property
    def credentials(self) -> list[Credential]:
        """Every key found, with organization/project from the cache where known."""
        return [self._from_cache(credential) or credential for credential in self._credentials]

    def _from_cache(self, credential: Credential) -> Credential | None:
        entry = self._identities.get(credential.fingerprint())
        if entry is None:
            return None
        return credential.with_identity(entry.organization, entry.project)

    def credential(self, key_env: str) -> Credential:
        for credential in self.credentials:
            if credential.key_env == key_env:
                return credential
        reason = "is empty" if key_env in os.environ else "is not set"
        raise MissingApiKey(
            f"No API key in {key_env}: the environment variable {reason}.",
            hint="Set it, or run `labmgr keys` to see the keys labmgr finds.",
        )

    def default(self, endpoint: str = OPENAI_ENDPOINT) -> Credential:
        """The first key of `endpoint` (``OPENAI_API_KEY`` before ``OPENAI_API_KEY_*``)."""
        for credential in self.credentials:
            if credential.endpoint == endpoint:
                return credential
        if endpoint == OPENAI_ENDPOINT:
            raise MissingApiKey(
                "No OpenAI API key found in the environment.",
                hint="Set OPENAI_API_KEY (or OPENAI_API_KEY_<NAME> for several projects), "
                "or run `labmgr keys` to see what labmgr finds.",
            )
        configured = self.settings.endpoints.get(endpoint)
        needed = configured.key_env if configured else f"{endpoint.upper()}_API_KEY"
        more = f" (or {needed}_<NAME> for several)" if configured is None else ""
        raise MissingApiKey(
            f"No API key found for endpoint {endpoint!r}: {needed} is not set.",
            hint=f"Set {needed}{more} in the environment, or run `labmgr keys`.",
        )

    def resolve(self, credential: Credential, *, refresh: bool = False) -> Credential:
        """`credential` with its organization and project (cached, or one ``GET /models``);
        raises `CredentialCheckFailed` (naming the env var, never the key), `MissingApiKey`.
        A Tinker key has neither: it is taken as it is (`check_all` asks Tinker)."""
        if credential.endpoint == TINKER_ENDPOINT:
            credential.api_key()
            return credential.with_identity(None, None)
        if not refresh:
            cached = self._from_cache(credential)
            if cached is not None:
                return cached
        import openai  # only when a key is checked over the network

        secret = credential.api_key()
        client = self.pool.client(credential)
        where = f"{credential.key_env} at {credential.base_url}"
        try:
            raw = client.models.with_raw_response.list()
        except openai.APIStatusError as exc:
            detail = scrub_keys(str(exc.message), secret)
            raise CredentialCheckFailed(
                f"Checking {where} failed: HTTP {exc.status_code}: {detail}",
                hint="Check that the key is valid for that endpoint; `labmgr keys` lists them.",
            ) from None
        except openai.APIConnectionError as exc:
            kind = "timed out" if isinstance(exc, openai.APITimeoutError) else "could not connect"
            raise CredentialCheckFailed(
                f"Checking {where} failed: {kind}.",
                hint="Is the endpoint up and the base URL right (OPENAI_BASE_URL or config)?",
            ) from None
        organization = raw.headers.get("openai-organization") or None
        project = raw.headers.get("openai-project") or None
        identity = CachedIdentity(
            endpoint=credential.endpoint,
            base_url=credential.base_url,
            key_env=credential.key_env,
            organization=organization,
            project=project,
        )
        fingerprint = credential.fingerprint()
        self._identities[fingerprint] = self._cache.put(fingerprint, identity)
        return credential.with_identity(organization, project)

    def check_all(self, *, refresh: bool = False, network: bool = True) -> list[KeyStatus]:
        """Every key with its identity (a Tinker key: whether Tinker accepts it); lookups that
        fail are reported, not raised."""
        statuses = []
        for credential in self._credentials:
            cached = None if refresh else self._from_cache(credential)
            if cached is not None:
                statuses.append(KeyStatus(cached, cached=True))
            elif not network:
                statuses.append(KeyStatus(credential))
            else:
                try:
                    if credential.endpoint == TINKER_ENDPOINT:
                        _check_tinker_key(credential, self.settings.api.timeout)
                    statuses.append(KeyStatus(self.resolve(credential, refresh=True)))
                except LabmgrError as exc:
                    statuses.append(KeyStatus(credential, error=exc.message))
        return statuses


def _check_tinker_key(credential: Credential, timeout: float) -> None:
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
