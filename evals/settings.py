"""Run settings: how a run behaves, never what it asks (so none of this is in the cache key)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunSettings", "default_cache_dir"]


def default_cache_dir() -> Path:
    """`$LABMGR_CACHE_DIR` if set, else the lab's cache folder, else `labmgr_cache/` in the
    working directory."""
    if os.environ.get("LABMGR_CACHE_DIR"):
        return Path(os.environ["LABMGR_CACHE_DIR"])
    from evals.lab import lab_settings

    settings = lab_settings()
    configured = getattr(settings, "cache_dir", None)
    return Path(configured) if configured else Path("labmgr_cache")


class RunSettings(BaseModel):
    """Concurrency, retries, timeouts, cost limit and progress display of a run."""

    model_config = ConfigDict(extra="forbid")

    max_concurrency: int = Field(default=100, ge=1)
    """Requests in flight at once, across all endpoints."""
    initial_endpoint_limit: int | None = Field(default=None, ge=1)
    """Starting per-endpoint limit of the adaptive controller (None: `max_concurrency`)."""
    max_attempts: int = Field(default=8, ge=1)
    """Attempts per request before its samples are given up (errors, not answers)."""
    max_retry_seconds: float = Field(default=300.0, gt=0)
    """Time after a request's first attempt beyond which it is not retried."""
    request_timeout: float = Field(default=120.0, gt=0)
    max_backoff_seconds: float = Field(default=30.0, gt=0)
    http_transport: Literal["aiohttp", "httpx"] = "aiohttp"
    """HTTP layer under the OpenAI SDK: aiohttp (less CPU per request; used when installed)
    or the SDK's own httpx2."""
    use_n: bool = True
    """Ask for several samples of one prompt in one request where the endpoint supports it."""
    max_cost: float | None = Field(default=None, ge=0)
    """Stop sending new requests once this many dollars were spent in the run."""
    progress: bool | None = None
    """Show rich progress; None shows it on a terminal or in a notebook only."""
