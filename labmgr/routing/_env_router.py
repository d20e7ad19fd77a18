"""`EnvRouter`: routing without a lab, from the environment alone."""

from __future__ import annotations

import os

from labmgr.capabilities import TINKER_MODEL_PATTERNS
from labmgr.routing._endpoint import DEFAULT_BASE_URL, Endpoint, NoEndpointError
from labmgr.routing._tinker import goes_to_tinker, tinker_endpoint


class EnvRouter:
    """Every model on one endpoint: `base_url` (else `OPENAI_BASE_URL`, else OpenAI's) with
    the key in the environment variable `key_env`; Tinker's models on Tinker's endpoint
    (`TINKER_BASE_URL`, `TINKER_API_KEY`; see `labmgr.routing._tinker`)."""

    def __init__(self, *, base_url: str | None = None, key_env: str = "OPENAI_API_KEY") -> None:
        self.key_env = key_env
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    def _key(self) -> str:
        value = os.environ.get(self.key_env)
        if not value:
            raise NoEndpointError(f"no API key: set the environment variable {self.key_env}")
        return value

    def endpoint_for(self, model: str) -> Endpoint:
        from labmgr.accounts import tinker_key_envs

        has_key = bool(tinker_key_envs())
        if goes_to_tinker(
            model, TINKER_MODEL_PATTERNS, has_key=has_key, fallback_url=lambda: self.base_url
        ):
            return tinker_endpoint(model)
        if not self.base_url.startswith(("http://", "https://")):
            raise NoEndpointError(
                f"the base URL {self.base_url!r} must start with http:// or https://",
                hint="Fix OPENAI_BASE_URL (or the router's base_url), e.g. "
                "http://127.0.0.1:8000/v1.",
            )
        self._key()
        return Endpoint(base_url=self.base_url, key_name=self.key_env, api_key=self._key)
