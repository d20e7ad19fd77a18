"""The async runner: sends chat requests for missing samples, persists results as they
arrive (at most `STORE_DELAY` later, those that arrive together in one transaction), retries
what is transient and gives up cleanly on what is not."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping
from typing import Any

import httpx2

from evals.cache import Cache, SampleResult
from evals.errors import CacheError
from evals.runner._choices import read_choices
from evals.runner._clients import ClientLease
from evals.runner._failures import FailureKind, classify
from evals.runner._limits import AdaptiveLimit
from evals.runner._outcome import PriceFunction, RunOutcome
from evals.runner._pacing import Pacing
from evals.runner._progress import RunProgress
from evals.runner._settings import RunSettings
from evals.runner._work import Work, interleave
from labmgr.routing import Endpoint

__all__ = ["STORE_BATCH", "STORE_DELAY", "run_works"]

STORE_DELAY = 0.02
"""The longest an answer waits to be stored (seconds): answers that arrive together are
stored in one transaction. A run that ends or is cancelled stores what it read first."""
STORE_BATCH = 256
"""Answers waiting to be stored that are stored at once, without waiting for the delay."""


class _Run:
    def __init__(
        self,
        cache: Cache,
        settings: RunSettings,
        price: PriceFunction,
        progress: RunProgress,
        owner: str | None = None,
    ) -> None:
        self.cache = cache
        self.owner = owner
        """The claimant whose claim giving a sample up releases (so another may try it);
        claims on stored samples are released together when the buying ends."""
        self.settings = settings
        self.price = price
        self.progress = progress
        self.outcome = RunOutcome()
        self.clients = ClientLease(settings)
        """Kept across fetches on the runner loop (open connections reused)."""
        self.limits: dict[str, AdaptiveLimit] = {}
        self.queue: asyncio.Queue[Work] = asyncio.Queue()
        self.sleepers: set[asyncio.Task[None]] = set()
        self.cache_failure: CacheError | None = None
        """Set when answers can no longer be stored: the run stops and raises it."""
        self.unstored: list[tuple[Work, list[tuple[int, SampleResult]]]] = []
        """Answers read but not stored yet: stored together, `STORE_DELAY` at most later."""
        self.store_timer: asyncio.TimerHandle | None = None
        self.pacing = Pacing(
            release=self.queue.put_nowait, background=self._keep, skip=self._skip_reason
        )
        """Sends at each (endpoint, model family)'s rate limits, learned from the answers."""

    # ---- per endpoint ---------------------------------------------------------------------

    def _limit(self, endpoint: Endpoint) -> AdaptiveLimit:
        limit = self.limits.get(endpoint.id)
        if limit is None:
            cap = self.settings.max_concurrency
            maximum = min(endpoint.max_concurrency or cap, cap)
            initial = self.settings.initial_endpoint_limit or maximum
            limit = self.limits[endpoint.id] = AdaptiveLimit(initial, maximum=maximum)
        return limit

    # ---- giving up ------------------------------------------------------------------------

    def _give_up(self, work: Work, message: str, *, record: bool = True) -> None:
        key = work.request.cache_key
        for ix in work.sample_ixs:
            self.outcome.errors[(key, ix)] = message
        self.progress.failed(work.request.model, len(work.sample_ixs))
        if record and self.cache_failure is None:
            try:
                self.cache.record_error(
                    work.request,
                    work.label,
                    work.sample_ixs,
                    kind="error",
                    message=message,
                    owner=self.owner,
                )
            except CacheError as error:
                self._cache_failed(error)

    def _cache_failed(self, error: CacheError) -> None:
        """Answers cannot be stored any more: stop sending (nothing more would be kept)."""
        self.cache_failure = self.cache_failure or error
        if self.outcome.stopped is None:
            self.outcome.stopped = error.message

    def _skip_reason(self, work: Work) -> str | None:
        if self.outcome.stopped is not None:
            return f"not run: {self.outcome.stopped}"
        failed = self.outcome.failed_models.get(work.request.model)
        if failed is not None:
            return f"model {work.request.model} failed: {failed}"
        return None

    # ---- the request ----------------------------------------------------------------------

    async def _send(self, work: Work) -> tuple[dict[str, Any], Mapping[str, str]]:
        content = work.request.body_json(len(work.sample_ixs))
        poster = self.clients.poster(work.endpoint)
        if poster is not None:  # straight through the client's aiohttp session
            return await poster.post(content)
        client = self.clients.client(work.endpoint)
        response = await client.post("/chat/completions", content=content, cast_to=httpx2.Response)
        data: dict[str, Any] = response.json()
        return data, response.headers

    def _accept(self, work: Work, data: dict[str, Any]) -> None:
        read = read_choices(data, work.sample_ixs, work.logprobs)
        model = work.request.model
        key = work.request.cache_key
        for ix, message in read.errors.items():
            self.outcome.errors[(key, ix)] = message
        stored = read.stored
        missing = len(work.sample_ixs) - len(stored)
        prompt, completion = read.prompt_tokens, read.completion_tokens
        cost = self.price(model, prompt, completion) or 0.0
        self.outcome.requests += 1
        self.outcome.prompt_tokens += prompt
        self.outcome.completion_tokens += completion
        self.outcome.reasoning_tokens += read.reasoning_tokens
        self.outcome.cost += cost
        self.progress.done(model, 0, missing, cost)
        if stored:
            self.unstored.append((work, stored))
            if len(self.unstored) >= STORE_BATCH:
                self._store_unstored()
            elif self.store_timer is None:
                loop = asyncio.get_running_loop()
                self.store_timer = loop.call_later(STORE_DELAY, self._store_unstored)
        max_cost = self.settings.max_cost
        if max_cost is not None and self.outcome.cost >= max_cost and not self.outcome.stopped:
            self.outcome.stopped = f"max_cost ${max_cost:g} reached (${self.outcome.cost:.4f})"

    def _store_unstored(self) -> None:
        """Store the answers read since the last store, in one transaction: a burst of
        answers costs one write, not one each."""
        if self.store_timer is not None:
            self.store_timer.cancel()
            self.store_timer = None
        answers, self.unstored = self.unstored, []
        if not answers:
            return
        try:
            self.cache.store_many([(w.request, w.label, stored) for w, stored in answers])
        except CacheError as error:
            self._cache_failed(error)
            for work, stored in answers:
                for ix, _ in stored:
                    self.outcome.errors[(work.request.cache_key, ix)] = (
                        f"not stored: {error.message}"
                    )
            return
        for work, stored in answers:
            self.outcome.samples += len(stored)
            self.progress.stored(work.request.model, len(stored))

    async def _attempt(self, work: Work) -> None:
        limit = self._limit(work.endpoint)
        await limit.acquire()
        if work.attempts == 0:
            work.first_attempt = time.monotonic()
        work.attempts += 1
        ticket = self.pacing.sending(work)
        try:
            data, headers = await self._send(work)
        except asyncio.CancelledError:
            limit.release()
            raise
        except Exception as error:
            limit.release()
            paced = self.pacing.failed(ticket, error)
            self._failed(work, error, limit, paced=paced)
            return
        limit.release()
        limit.succeeded()
        self.pacing.answered(ticket, headers, data)
        try:
            self._accept(work, data)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            self._give_up(work, f"malformed response: {type(error).__name__}: {error}")

    def _failed(
        self, work: Work, error: Exception, limit: AdaptiveLimit, *, paced: bool = False
    ) -> None:
        """Retry, give up on the samples, the model or the run; a 429 on a paced limit
        leaves the concurrency limit alone (the pacer waits instead)."""
        failure = classify(error, base_url=work.endpoint.base_url)
        model = work.request.model
        self.progress.error(model, failure.message)
        if failure.kind is FailureKind.STOP:
            if self.outcome.stopped is None:
                self.outcome.stopped = f"{model}: {failure.message}"
            self._give_up(work, f"run stopped: {failure.message}")
            return
        if failure.kind is FailureKind.MODEL:
            self.outcome.failed_models.setdefault(model, failure.message)
            self._give_up(work, f"model {model} failed: {failure.message}")
            return
        if failure.kind is FailureKind.SAMPLE:
            self._give_up(work, failure.message)
            return
        if failure.rate_limited and not paced:
            limit.rate_limited(failure.retry_after)
        elapsed = time.monotonic() - work.first_attempt
        if (
            work.attempts >= self.settings.max_attempts
            or elapsed >= self.settings.max_retry_seconds
        ):
            self._give_up(work, f"gave up after {work.attempts} attempts: {failure.message}")
            return
        delay = failure.retry_after
        if delay is None:
            backoff = min(self.settings.max_backoff_seconds, 0.5 * 2 ** (work.attempts - 1))
            delay = backoff * (0.5 + random.random() / 2)
        self.progress.retrying(model)
        self._retry_later(work, min(delay, self.settings.max_backoff_seconds))

    def _retry_later(self, work: Work, delay: float) -> None:
        """Queue `work` again after `delay` seconds (the current queue entry is finished)."""
        self._keep(asyncio.get_running_loop().create_task(self._sleep_then_queue(work, delay)))

    def _keep(self, task: asyncio.Task[None]) -> None:
        """A task that may still queue works: the run waits for it (and cancels it)."""
        self.sleepers.add(task)
        task.add_done_callback(self.sleepers.discard)

    async def _sleep_then_queue(self, work: Work, delay: float) -> None:
        await asyncio.sleep(delay)
        self.queue.put_nowait(work)

    async def _worker(self) -> None:
        while True:
            work = await self.queue.get()
            try:
                reason = self._skip_reason(work)
                if reason is not None:
                    self.pacing.forget(work)
                    self._give_up(work, reason, record=False)
                elif self.pacing.admit(work):
                    await self._attempt(work)
            finally:
                self.queue.task_done()

    async def run(self, works: list[Work]) -> RunOutcome:
        for work in interleave(works):
            self.queue.put_nowait(work)
        workers = [
            asyncio.create_task(self._worker())
            for _ in range(min(self.settings.max_concurrency, max(1, len(works))))
        ]
        try:
            while True:
                await self.queue.join()
                if not self.sleepers:
                    break
                await asyncio.wait(set(self.sleepers))
        finally:
            for task in [*workers, *self.sleepers]:
                task.cancel()
            await asyncio.gather(*workers, *self.sleepers, return_exceptions=True)
            self._store_unstored()  # cancelled or not, what was answered is kept
            self.pacing.close()
            await self.clients.release()
        if self.cache_failure is not None:
            raise self.cache_failure
        return self.outcome


async def run_works(
    works: list[Work],
    *,
    cache: Cache,
    settings: RunSettings,
    price: PriceFunction,
    progress: RunProgress,
    owner: str | None = None,
    live: bool = True,
) -> RunOutcome:
    """Send every Work (respecting the limits), persisting answers as they arrive (and
    releasing `owner`'s claims on them). `live=False` when the caller shows the progress."""
    if not works:
        return RunOutcome()
    run = _Run(cache, settings, price, progress, owner)
    if not live:
        return await run.run(works)
    async with progress.live():
        return await run.run(works)
