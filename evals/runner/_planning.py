"""Planning: from models and conversations to the requests to have cached (one per model ×
conversation), each with its endpoint or the reason it has none."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from evals.cache import ChatRequest, RequestBatch
from evals.errors import GroupsError, NoEndpointError
from evals.runner._model_params import params_for_model
from evals.runner._routing import ClientRouter, Endpoint

if TYPE_CHECKING:
    from evals.cache import CachedLookup
    from evals.runner._settings import RunSettings
    from evals.runner._work import Work

__all__ = [
    "Asked",
    "Planned",
    "endpoints_for",
    "gc_paused",
    "missing_works",
    "ordered_models",
    "plan",
    "plan_question",
]


class Asked(Protocol):
    """What planning needs of a question: its conversations, parameters and sample counts
    (`evals.questions.Question` has all of these)."""

    @property
    def samples_per_paraphrase(self) -> int: ...

    @property
    def cached_samples_per_row(self) -> int: ...

    def conversations(self) -> list[list[dict[str, Any]]]: ...

    def request_params(self) -> dict[str, Any]: ...


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
class Planned:
    """One request to have `samples` cached samples of (or an error saying why not)."""

    model: str
    request: ChatRequest | None
    samples: int
    route_error: str | None = None
    endpoint: Endpoint | None = field(default=None, repr=False)


def ordered_models(groups: Mapping[str, Sequence[str]]) -> list[str]:
    """Every model once, in the order groups and their models are given."""
    if not isinstance(groups, Mapping) or not groups:
        raise GroupsError("groups must be a non-empty mapping of group name to a list of models")
    models: dict[str, None] = {}
    for group, members in groups.items():
        if isinstance(members, str) or not all(isinstance(m, str) for m in members):
            raise GroupsError(f"group '{group}' must be a list of model names")
        models.update(dict.fromkeys(members))
    return list(models)


def endpoints_for(models: Sequence[str], router: ClientRouter) -> dict[str, Endpoint | str]:
    """Each model's endpoint, or the routing error message for it."""
    routes: dict[str, Endpoint | str] = {}
    for model in models:
        try:
            routes[model] = router.endpoint_for(model)
        except NoEndpointError as error:
            routes[model] = error.message
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


def plan_question(
    question: Asked, groups: Mapping[str, Sequence[str]], router: ClientRouter
) -> tuple[dict[str, Endpoint | str], list[Planned]]:
    """Each model's route, and one plan per (model, conversation) in frame order."""
    models = ordered_models(groups)
    routes = endpoints_for(models, router)
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


def missing_works(
    planned: Sequence[Planned], cached: CachedLookup, settings: RunSettings, label: str
) -> list[Work]:
    """The API calls that would buy what `cached` lacks (none for unrouted requests)."""
    works: list[Work] = []
    for p in planned:
        if p.request is None or p.endpoint is None:
            continue
        missing = cached.missing(p.request.cache_key, p.samples)
        if missing:
            from evals.runner._work import split_work

            logprobs = bool(p.request.params.get("logprobs"))
            works.extend(
                split_work(
                    p.request,
                    label,
                    missing,
                    p.endpoint,
                    use_n=settings.use_n,
                    logprobs=logprobs,
                )
            )
    return works
