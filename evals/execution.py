"""From a question and model groups to cached results: plan the requests, look them up, run
what is missing, read everything back."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals.cache import Cache, CachedLookup
from evals.costs import default_price
from evals.model_params import params_for_model
from evals.outcome import PriceFunction, RunOutcome
from evals.requests import ChatRequest, RequestBatch
from evals.routing import ClientRouter, Endpoint, NoEndpointError
from evals.settings import RunSettings, default_cache_dir

if TYPE_CHECKING:
    import pandas as pd

    from evals.question import Question
    from evals.runner.engine import Work

__all__ = [
    "Context",
    "Planned",
    "fetch",
    "make_context",
    "ordered_models",
    "plan_question",
    "question_frame",
]


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while building many small objects (bulk loads create
    hundreds of thousands of acyclic objects; collections over a large heap dominate)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class Context:
    """Where results live and how a run behaves."""

    cache: Cache
    router: ClientRouter
    settings: RunSettings
    price: PriceFunction


def make_context(
    *,
    cache: Cache | str | None = None,
    router: ClientRouter | None = None,
    settings: RunSettings | None = None,
    price: PriceFunction | None = None,
    **overrides: Any,
) -> Context:
    """Build a Context; `overrides` are RunSettings fields (e.g. `max_cost=5`)."""
    from evals.lab import default_router, lab_run_settings

    base = settings or lab_run_settings()
    if overrides:
        base = RunSettings.model_validate({**base.model_dump(), **overrides})
    if cache is None:
        cache = Cache(default_cache_dir())
    elif not isinstance(cache, Cache):
        cache = Cache(cache)
    return Context(cache, router or default_router(), base, price or default_price())


@dataclass
class Planned:
    """One request to have `samples` cached samples of (or an error saying why not)."""

    model: str
    request: ChatRequest | None
    samples: int
    route_error: str | None = None
    endpoint: Endpoint | None = field(default=None, repr=False)


def ordered_models(groups: Mapping[str, list[str]]) -> list[str]:
    """Every model once, in the order groups and their models are given."""
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError("groups must be a non-empty mapping of group name to a list of models")
    models: dict[str, None] = {}
    for group, members in groups.items():
        if isinstance(members, str) or not all(isinstance(m, str) for m in members):
            raise ValueError(f"group '{group}' must be a list of model names")
        models.update(dict.fromkeys(members))
    return list(models)


def endpoints_for(models: list[str], router: ClientRouter) -> dict[str, Endpoint | str]:
    """Each model's endpoint, or the routing error message for it."""
    routes: dict[str, Endpoint | str] = {}
    for model in models:
        try:
            routes[model] = router.endpoint_for(model)
        except NoEndpointError as error:
            routes[model] = str(error)
    return routes


def plan(
    model: str,
    route: Endpoint | str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    samples: int,
    batch: RequestBatch | None = None,
) -> Planned:
    """One planned request; a `batch` shared across calls serialises shared parts once."""
    if isinstance(route, str):
        return Planned(model, None, samples, route_error=route)
    params = params_for_model(model, params)
    if batch is not None:
        request = batch.request(route.identity, model, messages, params)
    else:
        request = ChatRequest(
            endpoint=route.identity, model=model, messages=messages, params=params
        )
    return Planned(model, request, samples, endpoint=route)


@dataclass
class Fetched:
    results: CachedLookup
    outcome: RunOutcome


def missing_works(
    planned: list[Planned], cached: CachedLookup, ctx: Context, label: str
) -> list[Work]:
    works: list[Work] = []
    for p in planned:
        if p.request is None or p.endpoint is None:
            continue
        missing = cached.missing(p.request.cache_key, p.samples)
        if missing:
            from evals.runner.engine import split_work

            logprobs = bool(p.request.params.get("logprobs"))
            works.extend(
                split_work(
                    p.request,
                    label,
                    missing,
                    p.endpoint,
                    use_n=ctx.settings.use_n,
                    logprobs=logprobs,
                )
            )
    return works


def fetch(planned: list[Planned], ctx: Context, *, label: str, title: str) -> Fetched:
    """Cached samples of every planned request, running the missing ones first."""
    wanted: dict[str, int] = {}
    by_model: dict[str, dict[str, int]] = {}  # read (and packed) a model at a time
    for p in planned:
        if p.request is not None:
            key = p.request.cache_key
            wanted[key] = max(p.samples, wanted.get(key, 0))
            by_model.setdefault(p.model, {})[key] = wanted[key]
    with gc_paused():
        cached = ctx.cache.lookup_packed(list(by_model.values()))
    works = missing_works(planned, cached, ctx, label)
    if not works:
        return Fetched(cached, RunOutcome())
    # The runner (and with it the OpenAI SDK and the HTTP stack) is needed only now.
    from evals.runner.blocking import run_blocking
    from evals.runner.engine import run_works
    from evals.runner.progress import RunProgress

    totals: dict[str, int] = {}
    for work in works:
        totals[work.request.model] = totals.get(work.request.model, 0) + len(work.sample_ixs)
    progress = RunProgress(totals, show=ctx.settings.progress, title=title)
    outcome = run_blocking(
        lambda: run_works(
            works, cache=ctx.cache, settings=ctx.settings, price=ctx.price, progress=progress
        )
    )
    # Read back: when several processes bought the same sample, the first one stored wins.
    # Whole models are read again, so that those now complete are packed for the next reload.
    bought = {w.request.cache_key for w in works}
    with gc_paused():
        cached.update(
            ctx.cache.lookup_packed(
                [chunk for chunk in by_model.values() if not bought.isdisjoint(chunk)]
            )
        )
    return Fetched(cached, outcome)


def plan_question(
    question: Question, groups: Mapping[str, list[str]], ctx: Context
) -> tuple[dict[str, Endpoint | str], list[Planned]]:
    """Each model's route, and one plan per (model, conversation) in frame order."""
    models = ordered_models(groups)
    routes = endpoints_for(models, ctx.router)
    conversations = question.conversations()
    params = question.request_params()
    per_conversation = question.samples_per_paraphrase * question.cached_samples_per_row
    batch = RequestBatch()
    # Adapted once per model: the batch remembers params by identity, so a reasoning model's
    # params (a new dict when adapted) would otherwise be serialised once per conversation.
    adapted = {model: params_for_model(model, params) for model in models}
    planned = [
        plan(model, routes[model], conversation, adapted[model], per_conversation, batch)
        for model in models
        for conversation in conversations
    ]
    return routes, planned


def question_frame(
    question: Question, groups: Mapping[str, list[str]], **options: Any
) -> pd.DataFrame:
    """`Question.df`: run what is missing and build the DataFrame (judges included)."""
    from evals.frames import build_frame
    from evals.judging import add_judges

    ctx = make_context(**options)
    with gc_paused():  # thousands of requests and keys, none of them in a cycle
        routes, planned = plan_question(question, groups, ctx)
    fetched = fetch(planned, ctx, label=question.name, title=f"{question.name}")
    with gc_paused():
        frame = build_frame(question, groups, planned, fetched, ctx.price)
    judges = getattr(question, "judges", None)
    if judges:
        frame = add_judges(frame, question.name, judges, ctx)
    _warn_about(fetched.outcome, routes)
    return frame


def _warn_about(outcome: RunOutcome, routes: Mapping[str, Endpoint | str]) -> None:
    import warnings

    for model, route in routes.items():
        if isinstance(route, str):
            warnings.warn(f"model {model} was not asked: {route}", stacklevel=3)
    for model, message in outcome.failed_models.items():
        warnings.warn(f"model {model} failed: {message}", stacklevel=3)
    if outcome.stopped:
        warnings.warn(f"the run stopped early: {outcome.stopped}", stacklevel=3)
