"""Pacing: send at each (endpoint, model family)'s rate limits, not into them, with a token
bucket per limit bounded by what answers and 429s say; and each endpoint's adaptive
concurrency limit, cut on a 429. See docs/design/runner.md (Pacing)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai

from evals.runner._planning import Call
from evals.runner._rate_limits import (
    TOKEN_MARGIN,
    Dimension,
    LimitReading,
    completion_budget,
    guess_family,
    prompt_guess,
    read_headers,
    read_refusal,
)

COUNTED_WITHIN = 1.0
"""Seconds after sending by which the server is taken to have counted a request."""
UNBUDGETED_COMPLETION = 16.0
"""Completion tokens per choice assumed without `max_tokens`, before any answer said."""
WAKE_SECONDS = 0.25
"""A waiting pacer looks again at least this often (say, for a run that stopped)."""


class _Meter:
    """This process's copy of one bucket: what its requests took (`spent`), of which `sent`
    has left and `settled` has come back."""

    __slots__ = ("level", "limit", "rate", "sent", "settled", "spent", "stamp")

    def __init__(self, limit: float, now: float) -> None:
        self.limit = limit
        self.rate = limit / 60.0
        self.level = 0.0
        self.stamp = now
        self.spent = 0.0
        self.sent = 0.0
        self.settled = 0.0

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.limit, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def wait(self, amount: float, now: float) -> float:
        """Seconds until the bucket holds `amount` (at most a full bucket)."""
        self.refill(now)
        need = min(amount, self.limit)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= amount
        self.spent += amount

    def give_back(self, amount: float) -> None:
        self.level = min(self.limit, self.level + amount)
        self.spent -= amount

    def learn(
        self, limit: float, remaining: float, counted: float, settled: float, sent_at: float
    ) -> None:
        """The server held `remaining` right after counting a request that took `counted`
        from this bucket, sent at `sent_at` when `settled` had come back. The level moves
        into the bounds this gives (docs/design/runner.md) and no further."""
        if limit != self.limit:
            self.limit, self.rate = limit, limit / 60.0
        now = time.monotonic()
        self.refill(now)
        counted_by = min(now, sent_at + COUNTED_WITHIN)
        low = remaining + (now - counted_by) * self.rate - (self.spent - settled - counted)
        high = remaining + (now - sent_at) * self.rate - (self.spent - self.sent)
        self.level = min(self.limit, high, max(self.level, low))


@dataclass(slots=True)
class Known:
    """What this process knows of one (endpoint, model family)'s limits, shared by every
    run's pacers."""

    meters: dict[Dimension, _Meter] = field(default_factory=dict)
    heard: bool = False
    """Whether any answer came back."""
    paused_until: float = 0.0


_KNOWN: dict[tuple[str, str], Known] = {}
"""(endpoint id, model family) → what the process learned of its limits."""


class Pacer:
    """One run's calls waiting for one (endpoint, model family)'s limits."""

    def __init__(self, known: Known) -> None:
        self.known = known
        self.probing = 0
        """Requests in flight before anything was heard (one at a time)."""
        self.pending: deque[Call] = deque()
        self.releaser: asyncio.Task[None] | None = None
        self._news: asyncio.Event | None = None

    def delay(self, tokens: float, now: float) -> float | None:
        """0 to send now, else seconds to wait; None: wait for the first answer."""
        if not self.known.meters:
            if self.known.heard or self.probing == 0:
                return 0.0
            return None
        wait = max(0.0, self.known.paused_until - now)
        for dimension, meter in self.known.meters.items():
            wait = max(wait, meter.wait(1.0 if dimension == "requests" else tokens, now))
        return wait

    def take(self, tokens: float) -> tuple[tuple[_Meter, float], ...]:
        """Take a request and its tokens out: each meter, with what it gave."""
        took = tuple(
            (meter, 1.0 if dimension == "requests" else tokens)
            for dimension, meter in self.known.meters.items()
        )
        for meter, amount in took:
            meter.take(amount)
        return took

    def notify(self) -> None:
        if self._news is not None:
            self._news.set()

    async def wait_news(self, seconds: float) -> None:
        """Sleep `seconds`, or less if an answer or a refusal comes back."""
        if self._news is None:
            self._news = asyncio.Event()
        self._news.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._news.wait(), seconds)


@dataclass(slots=True)
class Ticket:
    """What a sent request took from its pacer, to read its answer's headers against."""

    pacer: Pacer
    model: str
    endpoint_id: str
    prompt_guess: float
    probe: bool
    took: tuple[tuple[_Meter, float], ...]
    sent_at: float = 0.0
    settled: tuple[float, ...] = ()
    """Each meter's `settled` when this request left."""


class Pacing:
    """The pacers of one run. `release(call)` queues a call whose turn came, `background`
    keeps a releaser task, and a call `skip(call)` gives a reason for is released at once."""

    def __init__(
        self,
        *,
        release: Callable[[Call], None],
        background: Callable[[asyncio.Task[None]], None],
        skip: Callable[[Call], str | None],
    ) -> None:
        self._release = release
        self._background = background
        self._skip = skip
        self._pacers: dict[tuple[str, str], Pacer] = {}
        self._families: dict[str, str] = {}
        """Model → the family a refusal named."""
        self._by_route: dict[tuple[int, str], Pacer] = {}
        """(id of an endpoint, model) → its pacer."""
        self._tickets: dict[int, Ticket] = {}
        """Calls admitted and not yet sent, by id."""
        self._flying: dict[int, Ticket] = {}
        """Requests sent and not yet answered, by ticket id."""
        self._prompt_seen = 0.0
        self._prompt_guessed = 0.0
        self._completion_seen = 0.0
        self._choices_seen = 0

    def _pacer_of(self, call: Call) -> Pacer:
        """`pacer_for` a call, remembered per (endpoint object, model)."""
        known = self._by_route.get((id(call.endpoint), call.request.model))
        if known is None:
            known = self.pacer_for(call.endpoint.id, call.request.model)
            self._by_route[(id(call.endpoint), call.request.model)] = known
        return known

    def pacer_for(self, endpoint_id: str, model: str) -> Pacer:
        family = self._families.get(model) or guess_family(model)
        pacer = self._pacers.get((endpoint_id, family))
        if pacer is None:
            known = _KNOWN.setdefault((endpoint_id, family), Known())
            pacer = self._pacers[(endpoint_id, family)] = Pacer(known)
        return pacer

    def estimate(self, call: Call) -> tuple[float, float]:
        """The tokens `call` counts against a limit (prompt plus completion budget × n, with
        the margin), and the raw prompt guess it was made from."""
        guess = prompt_guess(call.request.messages)
        ratio = self._prompt_seen / self._prompt_guessed if self._prompt_guessed else 1.0
        budget = completion_budget(call.request.params) or (
            self._completion_seen / self._choices_seen
            if self._choices_seen
            else UNBUDGETED_COMPLETION
        )
        tokens = (guess * ratio + budget * len(call.sample_ixs)) * TOKEN_MARGIN
        return math.ceil(tokens), guess

    def admit(self, call: Call) -> bool:
        """True to send `call` now (its share is taken); False when it waits in its pacer's
        queue until its turn comes."""
        if id(call) in self._tickets:  # released by its pacer: already paid for
            return True
        pacer = self._pacer_of(call)
        if not pacer.pending and self._take(pacer, call) == 0.0:
            return True
        self._wait_in(pacer, [call])
        return False

    def _wait_in(self, pacer: Pacer, calls: list[Call]) -> None:
        """Queue `calls` behind `pacer`'s limits, with a releaser task sending them in turn."""
        pacer.pending.extend(calls)
        if pacer.releaser is None:
            pacer.releaser = asyncio.get_running_loop().create_task(self._releasing(pacer))
            self._background(pacer.releaser)

    def _take(self, pacer: Pacer, call: Call) -> float | None:
        """`pacer.delay` for `call`; at 0 its ticket is taken (its share of the buckets)."""
        tokens, guess = self.estimate(call)
        wait = pacer.delay(tokens, time.monotonic())
        if wait == 0.0:
            probe = not pacer.known.meters and not pacer.known.heard
            if probe:
                pacer.probing += 1
            took = pacer.take(tokens)
            ticket = Ticket(pacer, call.request.model, call.endpoint.id, guess, probe, took)
            self._tickets[id(call)] = ticket
        return wait

    def forget(self, call: Call) -> None:
        """`call` was admitted but will not be sent (given up before sending)."""
        ticket = self._tickets.pop(id(call), None)
        if ticket is not None:
            self._give_back(ticket)

    def close(self) -> None:
        """The run ended: what it admitted and never sent goes back to the buckets, and what
        it sent and never heard of settles."""
        while self._tickets:
            self._give_back(self._tickets.popitem()[1])
        for ticket in list(self._flying.values()):
            self._settle(ticket)

    @staticmethod
    def _give_back(ticket: Ticket) -> None:
        for meter, amount in ticket.took:
            meter.give_back(amount)
        if ticket.probe:
            ticket.pacer.probing -= 1
        ticket.pacer.notify()

    async def _releasing(self, pacer: Pacer) -> None:
        try:
            while pacer.pending:
                call = pacer.pending[0]
                if self._skip(call) is not None:
                    self._release(pacer.pending.popleft())
                    continue
                wait = self._take(pacer, call)
                if wait == 0.0:
                    self._release(pacer.pending.popleft())
                    continue
                await pacer.wait_news(WAKE_SECONDS if wait is None else min(wait, WAKE_SECONDS))
        finally:
            pacer.releaser = None

    def sending(self, call: Call) -> Ticket:
        """The ticket of an admitted call, stamped as it leaves."""
        ticket = self._tickets.pop(id(call))
        for meter, amount in ticket.took:
            meter.sent += amount
        ticket.settled = tuple(meter.settled for meter, _ in ticket.took)
        ticket.sent_at = time.monotonic()
        self._flying[id(ticket)] = ticket
        return ticket

    def answered(self, ticket: Ticket, headers: object, data: dict[str, Any]) -> None:
        """An answer came: bound the buckets by its headers, learn how tokens count."""
        pacer = ticket.pacer
        self._settle(ticket)
        pacer.known.heard = True
        self._learn(pacer, ticket, read_headers(headers), counted=True)
        usage = data.get("usage")
        if isinstance(usage, dict):
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if isinstance(prompt, int | float) and prompt > 0:
                self._prompt_seen += prompt
                self._prompt_guessed += ticket.prompt_guess
            choices = data.get("choices")
            if isinstance(completion, int | float) and isinstance(choices, list) and choices:
                self._completion_seen += completion
                self._choices_seen += len(choices)
        pacer.notify()

    def failed(self, ticket: Ticket, error: BaseException) -> bool:
        """A request failed; from a 429 the pacer learns the limit, the family and the wait.
        True when the refusal named a per-minute limit pacing now handles (the concurrency
        limit need not shrink)."""
        pacer = ticket.pacer
        self._settle(ticket)
        handled = False
        if isinstance(error, openai.APIStatusError) and error.status_code == 429:
            handled = self._refused(ticket, error)
        pacer.notify()
        return handled

    def _refused(self, ticket: Ticket, error: openai.APIStatusError) -> bool:
        pacer = ticket.pacer
        pacer.known.heard = True
        body = error.body if isinstance(error.body, dict) else {}
        refusal = read_refusal(str(body.get("message") or error.message))
        readings = read_headers(error.response.headers)
        now = time.monotonic()
        if refusal is not None:
            pacer = self._rekey(ticket, refusal.family)
            if refusal.per_minute and refusal.dimension not in readings:
                remaining = max(0.0, refusal.limit - refusal.used)
                readings = {**readings, refusal.dimension: LimitReading(refusal.limit, remaining)}
            if refusal.wait is not None:
                pacer.known.paused_until = max(pacer.known.paused_until, now + refusal.wait)
        self._learn(pacer, ticket, readings, counted=False)
        return refusal is not None and refusal.per_minute and bool(pacer.known.meters)

    def _rekey(self, ticket: Ticket, family: str) -> Pacer:
        """The pacer of the family a refusal named (the model's from now on)."""
        if (self._families.get(ticket.model) or guess_family(ticket.model)) == family:
            return ticket.pacer
        self._families[ticket.model] = family
        self._by_route.clear()
        pacer, old = self.pacer_for(ticket.endpoint_id, ticket.model), ticket.pacer
        moved = [call for call in old.pending if call.request.model == ticket.model]
        if moved:  # its calls waiting behind the refused one wait for the family's limit now
            old.pending = deque(call for call in old.pending if call.request.model != ticket.model)
            self._wait_in(pacer, moved)
        return pacer

    def _settle(self, ticket: Ticket) -> None:
        del self._flying[id(ticket)]
        if ticket.probe:
            ticket.pacer.probing -= 1
        for meter, amount in ticket.took:
            meter.settled += amount

    @staticmethod
    def _learn(
        pacer: Pacer, ticket: Ticket, readings: dict[Dimension, LimitReading], *, counted: bool
    ) -> None:
        """Bound `pacer`'s buckets by readings; for a bucket the request did not take from,
        whatever had not settled may have been counted after it."""
        for dimension, reading in readings.items():
            meter = pacer.known.meters.get(dimension)
            if meter is None:
                meter = pacer.known.meters[dimension] = _Meter(reading.limit, time.monotonic())
            took, settled = 0.0, meter.settled
            for index, (taken_from, amount) in enumerate(ticket.took):
                if taken_from is meter:
                    took, settled = amount, ticket.settled[index]
            meter.learn(
                reading.limit, reading.remaining, took if counted else 0.0, settled, ticket.sent_at
            )


DECREASE = 0.7
"""What a 429 multiplies the limit by."""


class AdaptiveLimit:
    """An async concurrency limit: a 429 multiplies it by `DECREASE` (once per `cooldown`,
    never below 1); after `limit` successes in a row it grows by one, up to `maximum`."""

    def __init__(self, initial: int, *, maximum: int, cooldown: float = 2.0) -> None:
        self.maximum = max(1, maximum)
        self.limit = max(1, min(initial, self.maximum))
        self.cooldown = cooldown
        self.in_flight = 0
        self.cuts = 0
        self._successes = 0
        self._last_cut = -float("inf")
        self._paused_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        free = self.in_flight < self.limit and time.monotonic() >= self._paused_until
        if free and not self._waiters:
            self.in_flight += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._wake()
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1  # the slot was handed over, give it back
                self._wake()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        self.in_flight -= 1
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        """Hand free slots to waiters in order (after any pause)."""
        while self._waiters and self.in_flight < self.limit:
            pause = self._paused_until - time.monotonic()
            if pause > 0:
                asyncio.get_running_loop().call_later(pause, self._wake)
                return
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            self.in_flight += 1
            waiter.set_result(None)

    def succeeded(self) -> None:
        self._successes += 1
        if self._successes >= self.limit and self.limit < self.maximum:
            self.limit += 1
            self._successes = 0

    def rate_limited(self, retry_after: float | None) -> None:
        now = time.monotonic()
        self._successes = 0
        if retry_after:
            self._paused_until = max(self._paused_until, now + min(retry_after, 60.0))
        if now - self._last_cut >= self.cooldown:
            self._last_cut = now
            self.limit = max(1, int(self.limit * DECREASE))
            self.cuts += 1
