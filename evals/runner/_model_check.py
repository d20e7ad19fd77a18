"""Checks before spending: every model a run will use is looked up on its endpoint once,
concurrently. "No such model" or a refused connection stops the run in one sentence; any
other failure leaves the model unchecked."""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals.errors import NoEndpointError, UnknownModelError

if TYPE_CHECKING:
    from evals.runner._settings import RunSettings
    from labmgr.routing import ClientRouter, Endpoint

_CHECK_TIMEOUT_SECONDS = 30.0
_CHECKS_IN_FLIGHT = 32
CONFIRMED_FOR_SECONDS = 600.0
"""How long a model its endpoint confirmed is not looked up again through the same router."""
_CONFIRMED: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], float]] = (
    weakref.WeakKeyDictionary()
)
"""Router → (endpoint id, model) → when the endpoint last confirmed it (monotonic)."""


@dataclass
class ModelChecks:
    """The models a run will use, and what their endpoints said about each."""

    expected: dict[str, None] = field(default_factory=dict)
    """Models the run will ask, in the order they were announced."""
    found: dict[tuple[str, str], str] = field(default_factory=dict)
    """`(endpoint id, model) -> "ok"` or `"unchecked: why"`."""

    def expect(self, models: Iterable[str]) -> None:
        self.expected.update(dict.fromkeys(models))

    def check(self, router: ClientRouter, settings: RunSettings) -> None:
        """Look up every announced model not looked up yet (`UnknownModelError`,
        `NoEndpointError`)."""
        todo: list[tuple[str, Endpoint]] = []
        try:
            confirmed_at = _CONFIRMED.setdefault(router, {})
        except TypeError:  # a router that cannot be remembered weakly
            confirmed_at = {}
        for model in self.expected:
            try:
                endpoint = router.endpoint_for(model)
            except NoEndpointError:
                continue  # reported with the results: the model is not asked at all
            route = (endpoint.id, model)
            if route in self.found:
                continue
            if not endpoint.lists_models:
                self.found[route] = "unchecked: the endpoint lists no models"
                continue
            confirmed = confirmed_at.get(route)
            if confirmed is not None and time.monotonic() - confirmed < CONFIRMED_FOR_SECONDS:
                self.found[route] = "ok"
            else:
                todo.append((model, endpoint))
        if not todo:
            return
        from evals.runner._blocking import run_blocking

        answers = run_blocking(lambda: _look_up(todo, settings))
        missing = []
        now = time.monotonic()
        for (model, endpoint), answer in zip(todo, answers, strict=True):
            self.found[(endpoint.id, model)] = answer
            if answer == "ok":
                confirmed_at[(endpoint.id, model)] = now
            elif answer == "unreachable":
                raise NoEndpointError(
                    f"nobody listens at {endpoint.base_url.rstrip('/')} (connection refused), "
                    f"so {model} cannot be asked; nothing was bought.",
                    hint="Start the server, or fix the base URL (OPENAI_BASE_URL or the lab's "
                    "[endpoints]), and run again.",
                )
            elif answer == "missing":
                confirmed_at.pop((endpoint.id, model), None)
                missing.append((model, endpoint))
        if missing:
            model, endpoint = missing[0]
            others = f" (and {len(missing) - 1} other models)" if len(missing) > 1 else ""
            raise UnknownModelError(
                f"model {model} does not exist at {endpoint.base_url.rstrip('/')}{others}; "
                "nothing was bought.",
                hint="Fix the model name (in a group or a judge) and run again.",
            )


async def _look_up(todo: list[tuple[str, Endpoint]], settings: RunSettings) -> list[str]:
    import asyncio

    from openai import AsyncOpenAI

    from evals.runner._transport import ClientLease

    lease = ClientLease(settings)
    clients: dict[str, AsyncOpenAI] = {}
    for _, endpoint in todo:
        if endpoint.id not in clients:
            clients[endpoint.id] = lease.client(endpoint).with_options(
                max_retries=1, timeout=min(settings.request_timeout, _CHECK_TIMEOUT_SECONDS)
            )
    gate = asyncio.Semaphore(min(settings.max_concurrency, _CHECKS_IN_FLIGHT))

    async def one(model: str, endpoint: Endpoint) -> str:
        async with gate:
            try:
                await clients[endpoint.id].models.retrieve(model)
            except Exception as error:
                return _meaning(error)
            return "ok"

    try:
        return list(await asyncio.gather(*(one(model, endpoint) for model, endpoint in todo)))
    finally:
        await lease.release()


def _meaning(error: Exception) -> str:
    """`missing`, `unreachable` (a refused connection), or `unchecked: why`."""
    import openai

    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "unreachable"
        cause = cause.__cause__ or cause.__context__
    if isinstance(error, openai.NotFoundError):
        body: Any = error.body if isinstance(error.body, dict) else {}
        code = str(body.get("code") or getattr(error, "code", None) or "")
        message = str(body.get("message") or "")
        if code == "model_not_found" or "does not exist" in message:
            return "missing"
    return f"unchecked: {type(error).__name__}"
