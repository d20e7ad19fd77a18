"""Fetching: the cached samples of planned requests, buying the missing ones first (claimed,
sent by workers on the runner loop, stored as they arrive). See docs/design/runner.md."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from evals.cache import Cache, CachedLookup, Claims, SampleResult
from evals.errors import CacheError
from evals.runner._batch_files import where_held
from evals.runner._blocking import run_blocking, runner_loop
from evals.runner._choices import read_choices
from evals.runner._context import RunContext
from evals.runner._outcome import PriceFunction, RunOutcome
from evals.runner._planning import Call, Planned, gc_paused, missing_calls
from evals.runner._settings import RunSettings

if TYPE_CHECKING:  # the SDK, the HTTP stack and rich load only when something is bought
    from evals.runner._pacing import AdaptiveLimit
    from evals.runner._progress import RunProgress
    from labmgr.routing import Endpoint

__all__ = ["STORE_BATCH", "STORE_DELAY", "Fetched", "fetch"]


@dataclass
class Fetched:
    """What was found (after buying), and what the buying did."""

    results: CachedLookup
    outcome: RunOutcome = field(default_factory=RunOutcome)


def fetch(
    planned: Sequence[Planned],
    ctx: RunContext,
    *,
    labels: str | Sequence[str],
    title: str,
    settings: RunSettings | None = None,
    skip: str | None = None,
) -> Fetched:
    """Cached samples of every planned request, buying the missing ones first.

    `labels` names each planned request's question (one text for all); `settings` replaces
    the context's; with `skip` (a reason) nothing is bought and each missing sample gets it.
    """
    settings = settings or ctx.settings
    names = [labels] * len(planned) if isinstance(labels, str) else list(labels)
    outcome = RunOutcome()
    wanted: dict[str, int] = {}
    chunks: dict[tuple[str, str], dict[str, int]] = {}
    for p, label in zip(planned, names, strict=True):
        if p.request is not None:
            key = p.request.cache_key
            wanted[key] = max(p.samples, wanted.get(key, 0))
            chunks.setdefault((p.model, label), {})[key] = wanted[key]
        elif p.route_error is not None:
            outcome.unrouted_models.setdefault(p.model, p.route_error)
    with gc_paused():
        cached = ctx.cache.lookup_chunks(list(chunks.values()))
    calls = missing_calls(planned, cached, settings, names)
    outcome.cached = sum(wanted.values()) - sum(len(c.sample_ixs) for c in calls)
    if not calls:
        return Fetched(cached, outcome)
    if skip is not None:
        for call in calls:
            for ix in call.sample_ixs:
                outcome.errors[(call.request.cache_key, ix)] = f"not run: {skip}"
        return Fetched(cached, outcome)
    ctx.cache.check_writable()
    ctx.models.expect(dict.fromkeys(p.model for p in planned))
    ctx.models.check(ctx.router, settings)
    with gc_paused(False):  # buying may take hours: garbage is collected meanwhile
        if settings.batch:
            from evals.runner._batch_run import BatchRun

            outcome.add(BatchRun(ctx, settings, title=title).run(calls))
        else:
            from evals.runner._progress import RunProgress

            totals = Counter[str]()
            for call in calls:
                totals[call.request.model] += len(call.sample_ixs)
            progress = RunProgress(dict(totals), show=settings.progress, title=title)
            loop = runner_loop()
            with ctx.cache.claims() as claims, progress.live():
                buyer = _Buyer.on_loop(ctx.cache, settings, ctx.price, progress, claims.owner)
                try:
                    for mine in _claimed(calls, ctx.cache, claims, buyer):
                        count = min(settings.max_concurrency, len(mine))
                        loop.call_soon_threadsafe(buyer.queue_calls, mine, count)
                        workers = [
                            asyncio.run_coroutine_threadsafe(buyer.worker(), loop)
                            for _ in range(count)
                        ]
                        buyer.wait(workers)
                finally:
                    buyer.close()
                if buyer.cache_failure is not None:
                    raise buyer.cache_failure
                outcome.add(buyer.outcome)
    # Read back: when several processes bought the same sample, the first one stored wins.
    keys = {c.request.cache_key for c in calls}
    with gc_paused():
        cached.update(
            ctx.cache.lookup_chunks(
                [chunk for chunk in chunks.values() if not keys.isdisjoint(chunk)]
            )
        )
    return Fetched(cached, outcome)


STORE_DELAY = 0.02
"""The longest an answer waits to be stored (seconds): those that arrive together share a
transaction."""
STORE_BATCH = 256
"""This many answers waiting are stored at once, without waiting for the delay."""


Item = tuple[str, int]


def _items(calls: Iterable[Call]) -> list[Item]:
    return [(call.request.cache_key, ix) for call in calls for ix in call.sample_ixs]


def _interleaved(calls: list[Call]) -> list[Call]:
    """Round-robin over models so that load (and any 429s) spreads across them."""
    by_model: dict[str, list[Call]] = defaultdict(list)
    for call in calls:
        by_model[call.request.model].append(call)
    return [call for turn in zip_longest(*by_model.values()) for call in turn if call is not None]


def _restricted(calls: Iterable[Call], keep: set[Item]) -> list[Call]:
    """The calls with only the samples in `keep` (calls left empty are dropped)."""
    kept = []
    for call in calls:
        key = call.request.cache_key
        ixs = [ix for ix in call.sample_ixs if (key, ix) in keep]
        if ixs:
            kept.append(Call(call.request, call.label, ixs, call.endpoint, call.logprobs))
    return kept


def _wait_for_others(
    calls: list[Call], cache: Cache, progress: RunProgress, poll: float
) -> list[Call]:
    """Wait until every sample of `calls` landed (bought by its claimant); as soon as some are
    neither landed nor claimed (their claimant died or gave up), return the calls missing."""
    remaining = set(_items(calls))
    models = {call.request.cache_key: call.request.model for call in calls}
    while remaining:
        time.sleep(poll)
        landed = cache.landed(remaining)
        for key, _ in landed:
            progress.done(models[key], 1, 0, 0.0)
        progress.draw()
        remaining -= landed
        if remaining and len(cache.claimed(sorted(remaining))) < len(remaining):
            return _restricted(calls, remaining)
    return []


def _in_batches(cache: Cache, items: set[Item], outcome: RunOutcome) -> set[Item]:
    """Those of `items` a batch in flight holds, each left pending in `outcome`. Looked at
    after claiming: a batch run does the reverse, so of two racing runs one sees the other."""
    covering = cache.batches.covering(items) if items else {}
    if not covering:
        return set()
    records = {record_id: cache.batches.get(record_id) for record_id in set(covering.values())}
    for item, record_id in covering.items():
        outcome.errors[item] = (
            f"waiting in {where_held(records[record_id])} of another run; `labmgr batches "
            "collect` (or a run with --batch) collects it, then run again"
        )
        outcome.pending += 1
    return set(covering)


def _claimed(
    calls: list[Call], cache: Cache, claims: Claims, buyer: _Buyer
) -> Iterator[list[Call]]:
    """The calls this process is to buy, a round at a time: those it claimed, less any stored
    or put in a batch meanwhile; between rounds it waits for what others claimed, and claims
    again what they gave up (never a sample it tried itself)."""
    progress, outcome = buyer.progress, buyer.outcome
    tried: set[Item] = set()
    poll = min(0.25, claims.lease_seconds / 10)
    pending = calls
    while pending and outcome.stopped is None:
        items = _items(pending)
        ours = claims.take(items)
        models = {w.request.cache_key: w.request.model for w in pending}
        done = cache.landed(ours)  # stored by another process between our read and claim
        batched = _in_batches(cache, ours - done, outcome)
        if done:
            claims.release(sorted(done))
            for key, _ in done:
                progress.done(models[key], 1, 0, 0.0)
        if batched:
            claims.release(sorted(batched))
            for key, _ in batched:
                progress.done(models[key], 0, 1, 0.0)
        mine = _restricted(pending, ours - done - batched)
        theirs = _restricted(pending, set(items) - ours)
        if mine:
            tried.update(_items(mine))
            yield mine
        if not theirs or outcome.stopped is not None:
            return
        left = _wait_for_others(theirs, cache, progress, poll)
        pending = _restricted(left, set(_items(left)) - tried)


class _Buyer:
    """The buying of one fetch: its workers on the runner loop, what they stored and did.
    The workers of a round end once nothing is queued, sent or waiting to be retried."""

    def __init__(
        self,
        cache: Cache,
        settings: RunSettings,
        price: PriceFunction,
        progress: RunProgress,
        owner: str,
    ) -> None:
        self.cache = cache
        self.owner = owner
        """The claimant whose claims recorded errors release."""
        self.settings = settings
        self.price = price
        self.progress = progress
        from evals.runner._pacing import Pacing
        from evals.runner._transport import ClientLease

        self.loop = asyncio.get_running_loop()
        self.outcome = RunOutcome()
        self.clients = ClientLease(settings)
        self.limits: dict[str, AdaptiveLimit] = {}
        self.queue: asyncio.Queue[Call | None] = asyncio.Queue()
        self.sleepers: set[asyncio.Task[None]] = set()
        self.busy = 0
        """Workers holding a call."""
        self.workers = 0
        """Workers of this round, each ended by a `None` in the queue."""
        self.cache_failure: CacheError | None = None
        """Set when answers can no longer be stored: the run stops and raises it."""
        self.unstored: list[tuple[Call, list[tuple[int, SampleResult]]]] = []
        self.store_timer: asyncio.TimerHandle | None = None
        self.pacing = Pacing(
            release=self.queue.put_nowait, background=self._keep, skip=self._skip_reason
        )

    @classmethod
    def on_loop(cls, *args: Any) -> _Buyer:
        """A buyer made on the runner loop (where its clients live and its workers run)."""

        async def make() -> _Buyer:
            return cls(*args)

        return run_blocking(make)

    def wait(self, workers: list[Future[None]]) -> None:
        """Wait for the workers, drawing progress; Ctrl-C or a worker's crash cancels them
        (the crash is raised; `close` stores what was read)."""
        try:
            while True:
                _, running = futures.wait(workers, timeout=0.1, return_when=futures.FIRST_EXCEPTION)
                self.progress.draw()
                for worker in workers:
                    error = worker.exception() if worker.done() else None
                    if error is not None:
                        raise error
                if not running:
                    return
        except BaseException:
            for worker in workers:
                worker.cancel()
            futures.wait(workers)
            raise

    def close(self) -> None:
        """Cancel what waits to be retried, store what was read, let the clients go."""

        async def close() -> None:
            for task in list(self.sleepers):
                task.cancel()
            await asyncio.gather(*self.sleepers, return_exceptions=True)
            self._store_unstored()
            self.pacing.close()
            await self.clients.release()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result()

    def _limit(self, endpoint: Endpoint) -> AdaptiveLimit:
        limit = self.limits.get(endpoint.id)
        if limit is None:
            cap = self.settings.max_concurrency
            maximum = min(endpoint.max_concurrency or cap, cap)
            initial = self.settings.initial_endpoint_limit or maximum
            from evals.runner._pacing import AdaptiveLimit

            limit = self.limits[endpoint.id] = AdaptiveLimit(initial, maximum=maximum)
        return limit

    def _give_up(self, call: Call, message: str, *, record: bool = True) -> None:
        key = call.request.cache_key
        for ix in call.sample_ixs:
            self.outcome.errors[(key, ix)] = message
        self.progress.failed(call.request.model, len(call.sample_ixs))
        if record and self.cache_failure is None:
            try:
                self.cache.record_errors(
                    key,
                    call.request.model,
                    call.label,
                    call.sample_ixs,
                    message=message,
                    owner=self.owner,
                )
            except CacheError as error:
                self._cache_failed(error)

    def _cache_failed(self, error: CacheError) -> None:
        """Answers cannot be stored any more: stop sending."""
        self.cache_failure = self.cache_failure or error
        if self.outcome.stopped is None:
            self.outcome.stopped = error.message

    def _skip_reason(self, call: Call) -> str | None:
        if self.outcome.stopped is not None:
            return f"not run: {self.outcome.stopped}"
        failed = self.outcome.failed_models.get(call.request.model)
        if failed is not None:
            return f"model {call.request.model} failed: {failed}"
        return None

    def _accept(self, call: Call, data: dict[str, Any]) -> None:
        read = read_choices(data, call.sample_ixs, call.logprobs)
        model = call.request.model
        key = call.request.cache_key
        for ix, message in read.errors.items():
            self.outcome.errors[(key, ix)] = message
        stored = read.stored
        missing = len(call.sample_ixs) - len(stored)
        cost = self.price(model, read.prompt_tokens, read.completion_tokens) or 0.0
        self.outcome.count(read, cost)
        self.progress.done(model, 0, missing, cost)
        if stored:
            self.unstored.append((call, stored))
            if len(self.unstored) >= STORE_BATCH:
                self._store_unstored()
            elif self.store_timer is None:
                loop = asyncio.get_running_loop()
                self.store_timer = loop.call_later(STORE_DELAY, self._store_unstored)
        max_cost = self.settings.max_cost
        if max_cost is not None and self.outcome.cost >= max_cost and not self.outcome.stopped:
            self.outcome.stopped = f"max_cost ${max_cost:g} reached (${self.outcome.cost:.4f})"

    def _store_unstored(self) -> None:
        """Store the answers read since the last store, in one transaction."""
        if self.store_timer is not None:
            self.store_timer.cancel()
            self.store_timer = None
        answers, self.unstored = self.unstored, []
        if not answers:
            return
        try:
            self.cache.store_many(
                [(w.request.cache_key, w.request.model, w.label, got) for w, got in answers]
            )
        except CacheError as error:
            self._cache_failed(error)
            for call, stored in answers:
                for ix, _ in stored:
                    self.outcome.errors[(call.request.cache_key, ix)] = (
                        f"not stored: {error.message}"
                    )
            return
        for call, stored in answers:
            self.outcome.samples += len(stored)
            self.progress.stored(call.request.model, len(stored))

    def _failed(
        self, call: Call, error: Exception, limit: AdaptiveLimit, *, paced: bool = False
    ) -> None:
        """Retry, give up on the samples, the model or the run; a 429 on a paced limit
        leaves the concurrency limit alone (the pacer waits instead)."""
        from evals.runner._failures import FailureKind, classify

        failure = classify(error, base_url=call.endpoint.base_url)
        model = call.request.model
        self.progress.error(model, failure.message)
        if failure.kind is FailureKind.STOP:
            self.outcome.stopped = self.outcome.stopped or f"{model}: {failure.message}"
            self._give_up(call, f"run stopped: {failure.message}")
            return
        if failure.kind is FailureKind.MODEL:
            self.outcome.failed_models.setdefault(model, failure.message)
            self._give_up(call, f"model {model} failed: {failure.message}")
            return
        if failure.kind is FailureKind.SAMPLE:
            self._give_up(call, failure.message)
            return
        if failure.rate_limited and not paced:
            limit.rate_limited(failure.retry_after)
        elapsed = time.monotonic() - call.first_attempt
        if (
            call.attempts >= self.settings.max_attempts
            or elapsed >= self.settings.max_retry_seconds
        ):
            self._give_up(call, f"gave up after {call.attempts} attempts: {failure.message}")
            return
        delay = failure.retry_after
        if delay is None:
            backoff = min(self.settings.max_backoff_seconds, 0.5 * 2 ** (call.attempts - 1))
            delay = backoff * (0.5 + random.random() / 2)
        self.progress.retrying(model)
        delay = min(delay, self.settings.max_backoff_seconds)
        self._keep(asyncio.get_running_loop().create_task(self._sleep_then_queue(call, delay)))

    def _keep(self, task: asyncio.Task[None]) -> None:
        """A task that may still queue calls: the round waits for it (and cancels it)."""
        self.sleepers.add(task)
        task.add_done_callback(self._slept)

    def _slept(self, task: asyncio.Task[None]) -> None:
        self.sleepers.discard(task)
        self._end_if_idle()

    def queue_calls(self, calls: list[Call], workers: int) -> None:
        """Queue a round of calls for `workers` workers (on the loop, before they start)."""
        self.workers = workers
        for call in _interleaved(calls):
            self.queue.put_nowait(call)

    def _end_if_idle(self) -> None:
        if self.workers and not (self.busy or self.sleepers or self.queue.qsize()):
            for _ in range(self.workers):
                self.queue.put_nowait(None)
            self.workers = 0

    async def _sleep_then_queue(self, call: Call, delay: float) -> None:
        await asyncio.sleep(delay)
        self.queue.put_nowait(call)

    async def worker(self) -> None:
        """Take the next call and send it when it may go: the one place a request is made."""
        import httpx2

        while (call := await self.queue.get()) is not None:
            self.busy += 1
            try:
                reason = self._skip_reason(call)
                if reason is not None:
                    self.pacing.forget(call)
                    self._give_up(call, reason, record=False)
                    continue
                if not self.pacing.admit(call):
                    continue
                limit = self._limit(call.endpoint)
                await limit.acquire()
                if call.attempts == 0:
                    call.first_attempt = time.monotonic()
                call.attempts += 1
                ticket = self.pacing.sending(call)
                content = call.request.body_json(len(call.sample_ixs))
                try:
                    poster = self.clients.poster(call.endpoint)
                    if poster is not None:  # straight through the client's aiohttp session
                        data, headers = await poster.post(content)
                    else:
                        client = self.clients.client(call.endpoint)
                        response = await client.post(
                            "/chat/completions", content=content, cast_to=httpx2.Response
                        )
                        data, headers = response.json(), response.headers
                except asyncio.CancelledError:
                    limit.release()
                    raise
                except Exception as error:
                    limit.release()
                    self._failed(call, error, limit, paced=self.pacing.failed(ticket, error))
                    continue
                limit.release()
                limit.succeeded()
                self.pacing.answered(ticket, headers, data)
                try:
                    self._accept(call, data)
                except (KeyError, TypeError, ValueError, AttributeError) as error:
                    self._give_up(call, f"malformed response: {type(error).__name__}: {error}")
            finally:
                self.busy -= 1
                self._end_if_idle()
