"""Which models go to Tinker's OpenAI-compatible endpoint, for `EnvRouter` and `LabRouter`
alike: its checkpoints (``tinker://…``) always; its base models (``Qwen/Qwen3-8B``, …) when a
Tinker key is set, or when the alternative is OpenAI's own API, which never serves them (so
the missing ``TINKER_API_KEY`` is named). The endpoint takes one sample per request."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Sequence

from labmgr.capabilities import is_tinker_checkpoint
from labmgr.routing._endpoint import DEFAULT_BASE_URL, Endpoint, NoEndpointError

NO_TINKER_KEY_HINT = (
    "Tinker's models (tinker://… checkpoints, base models such as Qwen/Qwen3-8B) are "
    "served with a Tinker key: export TINKER_API_KEY (or TINKER_API_KEY_<NAME>); "
    "TINKER_BASE_URL points at another Tinker server."
)


def goes_to_tinker(
    model: str, patterns: Sequence[str], *, has_key: bool, fallback_url: Callable[[], str]
) -> bool:
    """Whether `model` is Tinker's: a checkpoint, or an id matching `patterns` when a Tinker
    key is set or the model would otherwise go to `fallback_url` = OpenAI's API."""
    if is_tinker_checkpoint(model):
        return True
    if not any(fnmatch.fnmatchcase(model, pattern) for pattern in patterns):
        return False
    return has_key or fallback_url().rstrip("/") == DEFAULT_BASE_URL


def tinker_endpoint(model: str) -> Endpoint:
    """Tinker's endpoint with the first Tinker key in the environment (no lab)."""
    from labmgr.accounts import tinker_base_url, tinker_key_envs
    from labmgr.errors import LabmgrError

    names = tinker_key_envs()
    if not names:
        raise NoEndpointError(
            f"no API key for {model}: set the environment variable TINKER_API_KEY",
            hint=NO_TINKER_KEY_HINT,
        )
    try:
        base_url = tinker_base_url()
    except LabmgrError as error:
        raise NoEndpointError(error.message, hint=error.hint) from None
    key_env = names[0]

    def key() -> str:
        value = os.environ.get(key_env, "").strip()
        if not value:
            raise NoEndpointError(f"no API key: set the environment variable {key_env}")
        return value

    return Endpoint(
        base_url=base_url, key_name=key_env, api_key=key, supports_n=False, lists_models=False
    )
