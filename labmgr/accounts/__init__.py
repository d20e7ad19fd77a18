"""API keys, their organizations and projects, and shared API clients: for instance
``accounts.pool.client(accounts.resolve(accounts.default()))``. Keys stay in the environment:
a `Credential` names the variable holding one."""

from labmgr.accounts._accounts import Accounts
from labmgr.accounts._credentials import (
    OPENAI_DEFAULT_BASE_URL,
    OPENAI_ENDPOINT,
    OPENROUTER_BASE_URL,
    TINKER_ENDPOINT,
    Credential,
    discover_credentials,
    key_env_name,
    openai_base_url,
    summarize_endpoints,
    tinker_base_url,
    tinker_key,
    tinker_key_envs,
    tinker_service_url,
    unset_endpoint_keys,
)
from labmgr.accounts._pool import ClientPool, key_digest
from labmgr.accounts._records import (
    CachedIdentity,
    SharedModel,
    identity_cache,
    shared_models,
)

__all__ = [
    "OPENAI_DEFAULT_BASE_URL",
    "OPENAI_ENDPOINT",
    "OPENROUTER_BASE_URL",
    "TINKER_ENDPOINT",
    "Accounts",
    "CachedIdentity",
    "ClientPool",
    "Credential",
    "SharedModel",
    "discover_credentials",
    "identity_cache",
    "key_digest",
    "key_env_name",
    "openai_base_url",
    "shared_models",
    "summarize_endpoints",
    "tinker_base_url",
    "tinker_key",
    "tinker_key_envs",
    "tinker_service_url",
    "unset_endpoint_keys",
]
