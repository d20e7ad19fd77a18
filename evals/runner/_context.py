"""The context of a run (cache, router, settings, price, the models it checks), built once at
the entry a person calls and handed down: nothing below it looks for a lab."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.adapters import Adapter, Hook, Selector, as_adapters
from evals.cache import Cache
from evals.errors import RunOptionsError
from evals.runner._model_check import ModelChecks
from evals.runner._model_params import RequestOptions
from evals.runner._outcome import PriceFunction, price_function
from evals.runner._settings import RunSettings
from labmgr.routing import ClientRouter

if TYPE_CHECKING:
    from labmgr.settings import Settings

REQUEST_OPTIONS = frozenset({"adapt", "reasoning_effort", "adapters"})
"""The options that shape requests (`RequestOptions`)."""
RUN_OPTIONS = (
    frozenset({"context", "lab", "home", "cache", "router", "settings", "price"})
    | REQUEST_OPTIONS
    | frozenset(RunSettings.model_fields)
)
"""Every option `q.df(groups, **options)` takes: `run_context`'s and the RunSettings fields."""


@dataclass
class RunContext:
    """Where results live, who answers, how a run behaves, and what it costs."""

    cache: Cache
    router: ClientRouter
    settings: RunSettings
    price: PriceFunction
    lab: Settings | None = None
    """The lab the parts came from (None when they were all given)."""
    models: ModelChecks = field(default_factory=ModelChecks)
    requests: RequestOptions = field(default_factory=RequestOptions)

    def with_settings(self, **changes: Any) -> RunContext:
        """The same context with RunSettings fields (or `REQUEST_OPTIONS`) changed."""
        if not changes:
            return self
        requests = _request_options(
            self.requests, {k: changes.pop(k) for k in REQUEST_OPTIONS & changes.keys()}
        )
        settings = self.settings.updated(**changes) if changes else self.settings
        return dataclasses.replace(self, settings=settings, requests=requests)


def _request_options(base: RequestOptions, given: dict[str, Any]) -> RequestOptions:
    changes: dict[str, Any] = {}
    if given.get("adapt") is not None:
        if not isinstance(given["adapt"], bool):
            raise RunOptionsError(f"option 'adapt' must be True or False, not {given['adapt']!r}")
        changes["adapt"] = given["adapt"]
    effort = given.get("reasoning_effort")
    if effort is not None:
        from labmgr.capabilities import REASONING_EFFORTS

        if effort not in REASONING_EFFORTS:
            raise RunOptionsError(
                f"option 'reasoning_effort' is {effort!r}, not one of "
                f"{', '.join(REASONING_EFFORTS)}"
            )
        changes["reasoning_effort"] = effort
    if "adapters" in given:
        changes["adapters"] = as_adapters(given["adapters"])
    return dataclasses.replace(base, **changes) if changes else base


def lab_context(lab: Settings) -> RunContext:
    """Everything from the lab: its cache, routing, `[eval]` defaults, prices and models."""
    return run_context(lab=lab)


def run_context(
    *,
    context: RunContext | None = None,
    lab: Settings | None = None,
    home: str | Path | None = None,
    cache: Cache | str | Path | None = None,
    router: ClientRouter | None = None,
    settings: RunSettings | None = None,
    price: PriceFunction | None = None,
    adapt: bool | None = None,
    reasoning_effort: str | None = None,
    adapters: Iterable[Adapter | tuple[Selector, Hook]] | None = None,
    **overrides: Any,
) -> RunContext:
    """The context of a run, from what the caller gives.

    `context` is used as it is (with `overrides`, RunSettings fields such as `max_cost=5`).
    Otherwise explicit parts win and the lab (`lab`, else found from `home` as every command
    finds it) fills in the rest; it is looked for only when `cache` or `router` is missing.
    `adapt`, `reasoning_effort` and `adapters` (default: those registered now) shape requests.
    """
    shaping: dict[str, Any] = {"adapt": adapt, "reasoning_effort": reasoning_effort}
    if adapters is not None:
        shaping["adapters"] = adapters
    if context is not None:
        parts = dict(lab=lab, home=home, cache=cache, router=router, settings=settings, price=price)
        given = [name for name, value in parts.items() if value is not None]
        if given:
            raise RunOptionsError(
                f"context= already holds the cache, router, settings and price; "
                f"drop {', '.join(given)}=",
            )
        return context.with_settings(**overrides, **shaping)
    if lab is None and (home is not None or cache is None or router is None):
        from labmgr.settings import load_settings

        lab = load_settings(home)
    if cache is None or router is None:
        assert lab is not None, "a lab is found whenever the cache or the router is missing"
        from labmgr.routing import LabRouter

        cache = cache if cache is not None else lab.cache_url
        router = router if router is not None else LabRouter.from_lab(lab)
    if settings is None:
        settings = RunSettings.from_lab(lab.eval) if lab is not None else RunSettings()
    base = RequestOptions(
        overrides=dict(lab.models) if lab is not None else {}, adapters=as_adapters(None)
    )
    return RunContext(
        cache=cache if isinstance(cache, Cache) else Cache(cache),
        router=router,
        settings=settings.updated(**overrides),
        price=price or price_function(lab.prices if lab is not None else None),
        lab=lab,
        requests=_request_options(base, shaping),
    )
