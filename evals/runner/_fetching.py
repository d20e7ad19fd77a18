"""Fetching: the cached samples of planned requests, buying the missing ones first (after the
checks that can be made before spending)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evals.cache import CachedLookup
from evals.runner._context import RunContext
from evals.runner._outcome import RunOutcome
from evals.runner._planning import Planned, gc_paused, missing_works
from evals.runner._settings import RunSettings

if TYPE_CHECKING:
    from evals.runner._work import Work

__all__ = ["Fetched", "fetch"]


@dataclass
class Fetched:
    """What was found (after buying), and what the buying did."""

    results: CachedLookup
    outcome: RunOutcome = field(default_factory=RunOutcome)


def fetch(
    planned: Sequence[Planned],
    ctx: RunContext,
    *,
    label: str,
    title: str,
    settings: RunSettings | None = None,
    skip: str | None = None,
    labels: Sequence[str] | None = None,
) -> Fetched:
    """Cached samples of every planned request, buying the missing ones first.

    `label` names the question in the cache (`labels`, when given, one per planned request:
    the questions of a fetch for several); `settings` replaces the context's for this
    fetch (say, a smaller `max_cost`); with `skip` (a reason) nothing is bought and each
    missing sample is left with that reason. Before the first purchase every model the run
    announced is checked on its endpoint and the cache is checked writable.
    """
    settings = settings or ctx.settings
    outcome = RunOutcome()
    wanted: dict[str, int] = {}
    # Read (and packed) a model at a time, a question at a time when there are several:
    # the chunks a question's own fetch reads later.
    by_model: dict[tuple[str, str], dict[str, int]] = {}
    for i, p in enumerate(planned):
        if p.request is not None:
            key = p.request.cache_key
            wanted[key] = max(p.samples, wanted.get(key, 0))
            chunk = (p.model, labels[i] if labels is not None else label)
            by_model.setdefault(chunk, {})[key] = wanted[key]
        elif p.route_error is not None:
            outcome.unrouted_models.setdefault(p.model, p.route_error)
    read = ctx.read
    if read is not None and all(not read.missing(key, n) for key, n in wanted.items()):
        cached = read  # read already by this run, and nothing is missing: not read again
    else:
        with gc_paused():
            cached = ctx.cache.lookup_packed(list(by_model.values()))
    works = missing_works(planned, cached, settings, label, labels)
    if not works:
        return Fetched(cached, outcome)
    if skip is not None:
        for work in works:
            for ix in work.sample_ixs:
                outcome.errors[(work.request.cache_key, ix)] = f"not run: {skip}"
        return Fetched(cached, outcome)
    ctx.cache.check_writable()
    ctx.models.expect(dict.fromkeys(p.model for p in planned))
    ctx.models.check(ctx.router, settings)
    if settings.batch:  # beside the synchronous runner: files, batches, waiting, collecting
        from evals.runner._batch_run import BatchRun

        outcome.add(BatchRun(ctx, settings, title=title).run(works))
    else:
        outcome.add(_run_now(works, ctx, settings, title))
    # Read back: when several processes bought the same sample, the first one stored wins.
    # Whole models are read again, so that those now complete are packed for the next reload.
    keys = {w.request.cache_key for w in works}
    with gc_paused():
        cached.update(
            ctx.cache.lookup_packed(
                [chunk for chunk in by_model.values() if not keys.isdisjoint(chunk)]
            )
        )
    return Fetched(cached, outcome)


def _run_now(works: list[Work], ctx: RunContext, settings: RunSettings, title: str) -> RunOutcome:
    """Buy through the async runner, one request per work, claiming first."""
    # The runner (and with it the OpenAI SDK and the HTTP stack) is needed only now.
    from evals.runner._blocking import run_blocking
    from evals.runner._buying import buy
    from evals.runner._progress import RunProgress

    totals: dict[str, int] = {}
    for work in works:
        totals[work.request.model] = totals.get(work.request.model, 0) + len(work.sample_ixs)
    progress = RunProgress(totals, show=settings.progress, title=title)
    # Claimed before buying, so that another process (or lab) asking for the same samples
    # waits for them instead of buying them too; released when this run finishes.
    with ctx.cache.claims() as claims:
        return run_blocking(
            lambda: buy(
                works,
                cache=ctx.cache,
                claims=claims,
                settings=settings,
                price=ctx.price,
                progress=progress,
            )
        )
