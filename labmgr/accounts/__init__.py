"""API keys, their organizations and projects, and shared API clients.

    from labmgr.accounts import Accounts
    accounts = Accounts(load_settings())
    credential = accounts.credential_for_org("org-abc", "proj_123")
    client = accounts.pool.client(credential)      # one client per endpoint + key

Keys stay in the environment: a `Credential` names the variable holding one.
"""

from labmgr.accounts._accounts import Accounts, KeyStatus
from labmgr.accounts._credential import OPENAI_ENDPOINT, OPENROUTER_ENDPOINT, Credential
from labmgr.accounts._discovery import (
    OPENAI_DEFAULT_BASE_URL,
    OPENROUTER_BASE_URL,
    EndpointSummary,
    discover_credentials,
    summarize_endpoints,
    unset_endpoint_keys,
)
from labmgr.accounts._identity_cache import CachedIdentity, IdentityCache
from labmgr.accounts._json_file import LockedJsonFile
from labmgr.accounts._pool import ClientPool

__all__ = [
    "OPENAI_DEFAULT_BASE_URL",
    "OPENAI_ENDPOINT",
    "OPENROUTER_BASE_URL",
    "OPENROUTER_ENDPOINT",
    "Accounts",
    "CachedIdentity",
    "ClientPool",
    "Credential",
    "EndpointSummary",
    "IdentityCache",
    "KeyStatus",
    "LockedJsonFile",
    "discover_credentials",
    "summarize_endpoints",
    "unset_endpoint_keys",
]
