"""Buying with claims: claim the missing samples, buy what this run got, wait for what other
processes are buying (reading it from the cache as it lands), and take over what a process
that died or gave up left unclaimed. Nothing is bought twice while the claimants live; a
sample is bought again only when its buyer died with it in flight (or paused past its lease).

A sample that a batch in flight holds (`cache.batches`, another run's `--batch`) is not
bought either: it is left pending, for whoever collects the batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from evals.cache import Cache, Claims
from evals.runner._engine import run_works
from evals.runner._outcome import PriceFunction, RunOutcome
from evals.runner._progress import RunProgress
from evals.runner._settings import RunSettings
from evals.runner._work import Work

__all__ = ["buy"]

Item = tuple[str, int]


def _items(works: Iterable[Work]) -> list[Item]:
    return [(work.request.cache_key, ix) for work in works for ix in work.sample_ixs]


def _restricted(works: Iterable[Work], keep: set[Item]) -> list[Work]:
    """The works with only the sample indices in `keep` (works left empty are dropped)."""
    kept = []
    for work in works:
        key = work.request.cache_key
        ixs = [ix for ix in work.sample_ixs if (key, ix) in keep]
        if ixs:
            kept.append(Work(work.request, work.label, ixs, work.endpoint, work.logprobs))
    return kept


def _landed(cache: Cache, items: Iterable[Item]) -> set[Item]:
    """Those of `items` now in the cache."""
    wanted = list(items)
    found = cache.lookup({key for key, _ in wanted})
    return {(key, ix) for key, ix in wanted if key in found and ix in found[key]}


async def _wait_for_others(
    works: list[Work], cache: Cache, claims: Claims, progress: RunProgress, poll: float
) -> list[Work]:
    """Wait until every sample of `works` landed in the cache (bought by its claimant); as
    soon as some are neither landed nor claimed (their claimant died or gave up), return
    the works still missing, to be claimed again."""
    remaining = set(_items(works))
    models = {work.request.cache_key: work.request.model for work in works}
    while remaining:
        await asyncio.sleep(poll)
        landed = _landed(cache, remaining)
        for key, _ in landed:
            progress.done(models[key], 1, 0, 0.0)
        remaining -= landed
        if remaining and len(claims.held(sorted(remaining))) < len(remaining):
            return _restricted(works, remaining)
    return []


def _in_batches(cache: Cache, items: set[Item], outcome: RunOutcome) -> set[Item]:
    """Those of `items` a batch in flight holds (claimed by a `--batch` run), each left
    pending in `outcome` with the batch it waits in. Looked at after claiming: a batch run
    puts its items in, then looks at the claims, so of two racing runs one sees the other."""
    covering = cache.batches.covering(items) if items else {}
    if not covering:
        return set()
    records = {record_id: cache.batches.get(record_id) for record_id in set(covering.values())}
    for item, record_id in covering.items():
        record = records[record_id]
        where = (
            f"batch {record.batch_id} ({record.status})"
            if record is not None and record.batch_id
            else "a batch being submitted"
        )
        outcome.errors[item] = (
            f"waiting in {where} of another run; `labmgr batches collect` (or a run with "
            "--batch) collects it, then run again"
        )
        outcome.pending += 1
    return set(covering)


async def buy(
    works: list[Work],
    *,
    cache: Cache,
    claims: Claims,
    settings: RunSettings,
    price: PriceFunction,
    progress: RunProgress,
) -> RunOutcome:
    """Buy the samples of `works` that nobody else is buying, wait for the rest."""
    outcome = RunOutcome()
    tried: set[Item] = set()
    poll = min(0.25, claims.lease_seconds / 10)
    pending = works
    async with progress.live():
        while pending and outcome.stopped is None:
            items = _items(pending)
            ours = claims.take(items)
            # Bought and stored by another process between our read and our claim.
            done = _landed(cache, ours)
            if done:
                claims.release(sorted(done))
                models = {w.request.cache_key: w.request.model for w in pending}
                for key, _ in done:
                    progress.done(models[key], 1, 0, 0.0)
            batched = _in_batches(cache, ours - done, outcome)
            if batched:
                claims.release(sorted(batched))
                models = {w.request.cache_key: w.request.model for w in pending}
                for key, _ in batched:
                    progress.done(models[key], 0, 1, 0.0)
            mine = _restricted(pending, ours - done - batched)
            theirs = _restricted(pending, set(items) - ours)
            if mine:
                tried.update(_items(mine))
                outcome.add(
                    await run_works(
                        mine,
                        cache=cache,
                        settings=settings,
                        price=price,
                        progress=progress,
                        owner=claims.owner,
                        live=False,
                    )
                )
            if not theirs or outcome.stopped is not None:
                break
            left = await _wait_for_others(theirs, cache, claims, progress, poll)
            pending = _restricted(left, set(_items(left)) - tried)
    return outcome
