"""Run settings: how a run behaves, never what it asks (so none of this is in the cache key)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evals.errors import RunOptionsError

if TYPE_CHECKING:
    from labmgr.settings import EvalDefaults


class RunSettings(BaseModel):
    """Concurrency, retries, timeouts, cost limit and progress display of a run."""

    model_config = ConfigDict(extra="forbid")

    max_concurrency: int = Field(default=100, ge=1)
    """Requests in flight at once, across all endpoints."""
    initial_endpoint_limit: int | None = Field(default=None, ge=1)
    """Starting per-endpoint adaptive limit (None: `max_concurrency`)."""
    max_attempts: int = Field(default=8, ge=1)
    max_retry_seconds: float = Field(default=300.0, gt=0)
    """Time after a request's first attempt beyond which it is not retried."""
    request_timeout: float = Field(default=120.0, gt=0)
    max_backoff_seconds: float = Field(default=30.0, gt=0)
    http_transport: Literal["aiohttp", "httpx"] = "aiohttp"
    """HTTP layer under the OpenAI SDK: aiohttp (less CPU; when installed) or httpx2."""
    use_n: bool = True
    """Ask for several samples of one prompt in one request where the endpoint supports it."""
    max_cost: float | None = Field(default=None, ge=0)
    """Stop sending new requests once this many dollars were spent in the run."""
    progress: bool | None = None
    """Show rich progress; None: on a terminal or in a notebook only."""
    batch: bool = False
    """Buy missing samples through the Batch API (half the price; answers within 24 h)."""
    batch_wait: bool = True
    """Wait for the batches; False submits them and returns (a re-run collects them)."""
    batch_poll_seconds: float = Field(default=15.0, gt=0)
    batch_max_requests: int = Field(default=50_000, ge=1)
    """Requests per batch (the API's limit is 50,000)."""
    batch_max_bytes: int = Field(default=190_000_000, ge=1_000)
    """Bytes per batch input file (the API's limit is 200 MB)."""
    batch_max_rounds: int = Field(default=3, ge=1)
    """Batches a sample may be sent in before a failing line is given up."""

    @classmethod
    def from_lab(cls, defaults: EvalDefaults) -> RunSettings:
        """The run defaults of a lab's `[eval]` section."""
        return cls(
            max_concurrency=defaults.max_concurrency,
            request_timeout=defaults.request_timeout,
            max_attempts=defaults.max_retries + 1,
        )

    def updated(self, **changes: Any) -> RunSettings:
        """A copy with `changes` validated (`RunOptionsError` names a bad field)."""
        if not changes:
            return self
        try:
            return RunSettings.model_validate({**self.model_dump(), **changes})
        except ValidationError as error:
            raise RunOptionsError.of(
                error,
                hint="Options are RunSettings fields ("
                + ", ".join(RunSettings.model_fields)
                + ") or cache=, router=, settings=, price=, lab=, home=, context=, adapt=, "
                "reasoning_effort=, adapters=.",
            ) from None
