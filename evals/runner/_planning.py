"""Planning: from models and conversations to the requests to have cached (one per model ×
conversation), each with its endpoint or the reason it has none, and the API calls that would
buy what the cache lacks."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals.cache import ChatRequest, RequestBatch
from evals.errors import GroupsError, NoEndpointError
from evals.runner._model_params import RequestOptions
from labmgr.routing import ClientRouter, Endpoint

if TYPE_CHECKING:
    from evals.cache import CachedLookup
    from evals.runner._question_shape import Askable
    from evals.runner._settings import RunSettings


@contextmanager
def gc_paused(paused: bool = True) -> Iterator[None]:
    """No cyclic garbage collection while building many small objects (planning and frames
    make hundreds of thousands of acyclic objects; collections over a large heap dominate);
    `gc_paused(False)` turns it back on inside (while buying, which may take hours)."""
    enabled = gc.isenabled()
    (gc.disable if paused else gc.enable)()
    try:
        yield
    finally:
        (gc.enable if enabled else gc.disable)()


@dataclass(slots=True)
class Call:
    """Missing samples of one request, sent as one API call (several samples via `n`)."""

    request: ChatRequest
    label: str
    """The question name recorded in the cache (for `labmgr cache clear --question`)."""
    sample_ixs: list[int]
    endpoint: Endpoint
    logprobs: bool = False
    attempts: int = 0
    first_attempt: float = 0.0


@dataclass
class Planned:
    """One request to have `samples` cached samples of (or an error saying why not)."""

    model: str
    request: ChatRequest | None
    samples: int
    route_error: str | None = None
    endpoint: Endpoint | None = field(default=None, repr=False)
    use_n: bool = True
    """Whether the model may give several samples per request (its capabilities' `n`)."""


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
    *,
    use_n: bool = True,
    messages_json: str | None = None,
) -> Planned:
    """One planned request with `params` as they are sent (see `RequestOptions.prepare`); a
    `batch` shared across calls serialises shared parts once (see `RequestBatch.request`
    for `messages_json`)."""
    if isinstance(route, str):
        return Planned(model, None, samples, route_error=route)
    batch = batch or RequestBatch()
    request = batch.request(route.identity, model, messages, params, messages_json)
    return Planned(model, request, samples, endpoint=route, use_n=use_n)


def describe_question(question: Askable) -> str:
    """How messages name a question: ``rating question 'mood'``."""
    return f"{question.type_name} question '{question.name}'"


def plan_question(
    question: Askable,
    groups: Mapping[str, Sequence[str]],
    router: ClientRouter,
    requests: RequestOptions | None = None,
) -> list[Planned]:
    """One plan per (model, conversation) in frame order.

    Each model's parameters are prepared once by `requests` (capabilities, adapting, hooks;
    the table alone when None), so a question some model would refuse raises
    `UnsupportedRequestError` here, before anything is bought."""
    requests = requests or RequestOptions()
    models = ordered_models(groups)
    # Prepared once per model: the batch remembers params by identity, so each model's
    # params are serialised once, not once per conversation.
    prepared = requests.prepare_models(
        models, question.request_params(), label=describe_question(question), adapt=question.adapt
    )
    routes = endpoints_for(models, router)
    conversations = question.conversations()
    per_conversation = question.samples_per_paraphrase * question.cached_samples_per_row
    batch = RequestBatch()
    return [
        plan(
            model,
            routes[model],
            conversation,
            prepared[model],
            per_conversation,
            batch,
            use_n=requests.capabilities(model).n,
        )
        for model in models
        for conversation in conversations
    ]


def missing_calls(
    planned: Sequence[Planned],
    cached: CachedLookup,
    settings: RunSettings,
    labels: Sequence[str],
) -> list[Call]:
    """The API calls that would buy what `cached` lacks (none for unrouted requests), each
    labelled with its question (`labels[i]` for `planned[i]`) and asking for up to the
    endpoint's `max_n` samples where the model and endpoint give several per request.
    A sample that several planned requests want (the same prompt in two questions bought
    together, a paraphrase repeated) is bought once, under the first one's label."""
    calls: list[Call] = []
    scheduled: dict[str, set[int]] = {}
    for p, label in zip(planned, labels, strict=True):
        if p.request is None or p.endpoint is None:
            continue
        taken = scheduled.setdefault(p.request.cache_key, set())
        missing = [ix for ix in cached.missing(p.request.cache_key, p.samples) if ix not in taken]
        taken.update(missing)
        use_n = settings.use_n and p.use_n and p.endpoint.supports_n
        size = p.endpoint.max_n if use_n else 1
        logprobs = bool(p.request.params.get("logprobs"))
        calls.extend(
            Call(p.request, label, missing[i : i + size], p.endpoint, logprobs)
            for i in range(0, len(missing), size)
        )
    return calls
