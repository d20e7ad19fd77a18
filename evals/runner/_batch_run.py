"""Buying samples through the Batch API: claim them per endpoint and model, submit them in
files split to the API's limits, record the batches before waiting, collect each as it ends.
See docs/design/batches.md."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from evals.cache import (
    ACTIVE_STATES,
    BatchItem,
    BatchLine,
    BatchRecord,
    ChatRequest,
    new_record_id,
)
from evals.errors import NoEndpointError
from evals.runner._batch_files import (
    CHAT_URL,
    LineResult,
    PlannedLine,
    chunks,
    input_line,
    planned_line,
    queue_limit_of,
    read_results,
    where_held,
)
from evals.runner._choices import read_choices
from evals.runner._context import RunContext
from evals.runner._failures import FailureKind, classify
from evals.runner._outcome import RunOutcome
from evals.runner._planning import Call
from evals.runner._progress import BatchProgress
from evals.runner._rate_limits import guess_family
from evals.runner._settings import RunSettings
from labmgr.routing import Endpoint

FINAL_STATUSES = frozenset({"completed", "expired", "cancelled", "failed"})
SUBMIT_LEASE = 300.0
"""Seconds a record being submitted is trusted; then another process looks for its batch."""
COLLECT_LEASE = 600.0
QUEUE_SHARE = 0.9
"""Share of a learned enqueued-token limit a run fills."""


@dataclass
class _Want:
    """A sample the run wants, and what happened to it so far."""

    request: ChatRequest
    endpoint: Endpoint
    logprobs: bool
    label: str
    attempts: int = 0
    done: bool = False
    error: str | None = None
    """Why its last batch did not give it (sent again in the next round)."""


class BatchRun:
    """One run's batches: those it submits and those of others it waits for."""

    def __init__(self, ctx: RunContext, settings: RunSettings, *, title: str) -> None:
        from labmgr.pricing import BATCH_DISCOUNT  # the price table loads with the first run

        self.ctx = ctx
        self.settings = settings
        self.records = ctx.cache.batches
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.discount = BATCH_DISCOUNT
        self.outcome = RunOutcome()
        self.progress = BatchProgress(show=settings.progress, title=title)
        self.wanted: dict[BatchItem, _Want] = {}
        self.per_line: dict[str, int] = {}
        """The most samples one line of a request may ask for (as `missing_calls` put them)."""
        self.watched: dict[str, BatchRecord] = {}
        self.clients: dict[str, openai.OpenAI] = {}
        self.endpoints: dict[str, Endpoint] = {}
        self.queue_limits: dict[tuple[str, str], float] = {}
        self.queue_refusals: dict[tuple[str, str], int] = {}
        self.in_flight: dict[str, float] = {}
        """The most each batch this run created and has not collected can cost."""
        self.bought_now: set[BatchItem] = set()
        """Samples a synchronous run was buying when last looked at: waited for, not sent."""
        self.no_credits: str | None = None
        """Why batches cannot be created any more (out of credits): none is tried again."""
        self.cancelled_before: set[str] = set()
        """Records cancelled before this run began: their unrun lines are sent again."""

    def run(self, calls: Sequence[Call]) -> RunOutcome:
        """Buy the samples of `calls` through batches (and collect those watched); with
        `batch_wait` False, submit and return after one look."""
        for call in calls:
            self.endpoints[call.endpoint.id] = call.endpoint
            key = call.request.cache_key
            self.per_line[key] = max(self.per_line.get(key, 1), len(call.sample_ixs))
            for ix in call.sample_ixs:
                self.wanted[(key, ix)] = _Want(
                    call.request, call.endpoint, call.logprobs, call.label
                )
        with self.progress.live():
            while True:
                open_items = [item for item, want in self.wanted.items() if not want.done]
                covered = self.records.covering(open_items)
                for record_id in set(covered.values()) - self.watched.keys():
                    self.watch(record_id)
                todo = [item for item in open_items if item not in covered]
                if todo:  # less what a synchronous run buys now (sent if its claim goes)
                    held = self.ctx.cache.claimed(todo)
                    self.bought_now = held - self._mark_cached(held)
                    todo = [item for item in todo if item not in held]
                if todo:
                    self._submit(todo)
                finished = self._poll()
                if not self.watched and all(want.done for want in self.wanted.values()):
                    break
                if not self.settings.batch_wait:
                    self._leave_waiting()
                    break
                if not finished:  # soon after a batch was created, then every poll
                    oldest = min((r.created for r in self.watched.values()), default=time.time())
                    age = time.time() - oldest
                    time.sleep(min(self.settings.batch_poll_seconds, 0.25 + 0.1 * age))
        self.close()
        return self.outcome

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self.clients.clear()

    def watch(self, record_id: str) -> None:
        """Wait for (and collect) a batch record, whoever submitted it."""
        record = self.records.get(record_id)
        if record is not None and record.state in ACTIVE_STATES:
            if record.status in ("cancelling", "cancelled"):
                self.cancelled_before.add(record_id)  # this run sends the rest again
            self.watched[record_id] = record
            self.progress.update(record, record.status or record.state)

    def batches(self, record: BatchRecord) -> Any:
        """The Batch API of the record's endpoint (`.retrieve(id)`, `.cancel(id)`)."""
        return self._client(self._endpoint(record)).batches

    @staticmethod
    def describe(error: Exception) -> str:
        """One line for a failed look-up (never a key: the SDK's messages hold none)."""
        return error.message if isinstance(error, NoEndpointError) else classify(error).message

    def _endpoint(self, record: BatchRecord) -> Endpoint:
        endpoint = self.endpoints.get(record.endpoint_id)
        if endpoint is None:
            endpoint = self.ctx.router.endpoint_for(record.model)
            if endpoint.id != record.endpoint_id:
                raise NoEndpointError(
                    f"batch {record.batch_id or record.id} of {record.model} was sent with "
                    f"another key or endpoint ({record.endpoint_id.split('|')[0]}, key "
                    f"{record.endpoint_id.split('|')[1]}) than this lab routes it to now",
                    hint="Set that key in the environment to collect it.",
                )
            self.endpoints[record.endpoint_id] = endpoint
        return endpoint

    def _client(self, endpoint: Endpoint) -> openai.OpenAI:
        client = self.clients.get(endpoint.id)
        if client is None:
            client = self.clients[endpoint.id] = openai.OpenAI(
                api_key=endpoint.api_key(),
                base_url=endpoint.base_url,
                organization=endpoint.organization,
                project=endpoint.project,
                timeout=max(self.settings.request_timeout, 60.0),
            )
        return client

    def _submit(self, todo: Iterable[BatchItem]) -> None:
        groups: dict[tuple[str, str], dict[str, list[int]]] = {}
        for key, ix in todo:
            want = self.wanted[(key, ix)]
            group = groups.setdefault((want.endpoint.id, want.request.model), {})
            group.setdefault(key, []).append(ix)
        for (endpoint_id, model), by_key in groups.items():
            endpoint = self.endpoints[endpoint_id]
            lines: list[PlannedLine] = []
            for key, ixs in by_key.items():
                want = self.wanted[(key, ixs[0])]
                ixs.sort()
                size = self.per_line[key]
                for start in range(0, len(ixs), size):
                    lines.append(
                        planned_line(
                            f"l{len(lines)}", want.request, ixs[start : start + size], want.logprobs
                        )
                    )
            self._submit_lines(endpoint, model, lines)

    def _submit_lines(self, endpoint: Endpoint, model: str, lines: list[PlannedLine]) -> None:
        family = (endpoint.id, guess_family(model))
        limit = self.queue_limits.get(family)
        room: float | None = None
        if limit is not None:
            room = limit * QUEUE_SHARE - self._enqueued(family)
            smallest = min(line.tokens for line in lines)
            if smallest > room:
                if self._enqueued(family) == 0:  # alone it can never fit: say so per sample
                    for line in lines:
                        if line.tokens > limit * QUEUE_SHARE:
                            self._give_up_lines(
                                [line],
                                f"asks {line.tokens:,} tokens, more than the enqueued-"
                                f"token limit of {limit:,.0f} for {model}",
                            )
                return  # wait for batches in flight to finish
            lines = [line for line in lines if line.tokens <= room]  # the rest waits for room
        for chunk in chunks(
            lines,
            max_requests=self.settings.batch_max_requests,
            max_bytes=self.settings.batch_max_bytes,
            max_tokens=room,
        ):
            if self.no_credits is not None:
                self._give_up_lines(chunk, f"not run: {self.no_credits}")
                continue
            prompt = sum(line.prompt_tokens for line in chunk)
            price = self.ctx.price(model, prompt, sum(line.completion_tokens for line in chunk))
            price = (price or 0.0) * self.discount  # the chunk's most expensive outcome
            max_cost = self.settings.max_cost
            spent = self.outcome.cost + sum(self.in_flight.values())
            if max_cost is not None and spent + price > max_cost:
                stopped = f"max_cost ${max_cost:g} would be passed"
                self.outcome.stopped = self.outcome.stopped or stopped
                self._give_up_lines(chunk, f"not run: {stopped}")
                continue
            self._submit_chunk(endpoint, model, chunk, price)
            if room is not None:
                return  # one batch at a time against a known queue limit

    def _submit_chunk(
        self, endpoint: Endpoint, model: str, chunk: list[PlannedLine], price: float
    ) -> None:
        label = self.wanted[(chunk[0].line.request_key, chunk[0].line.sample_ixs[0])].label
        record = BatchRecord(
            id=new_record_id(),
            endpoint_id=endpoint.id,
            base_url=endpoint.identity,
            model=model,
            label=label,
            owner=self.owner,
            tokens=sum(line.tokens for line in chunk),
        )
        got = self.records.claim(record, [line.line for line in chunk], SUBMIT_LEASE)
        got = self._not_cached(record, got)
        if not got:
            return
        by_id = {line.line.custom_id: line for line in chunk}
        content = b"".join(
            by_id[line.custom_id].body
            if line.sample_ixs == by_id[line.custom_id].line.sample_ixs
            else input_line(line.custom_id, by_id[line.custom_id].request, len(line.sample_ixs))
            for line in got
        )
        try:
            client = self._client(endpoint)
            uploaded = client.files.create(file=(f"{record.id}.jsonl", content), purpose="batch")
            batch = client.batches.create(
                input_file_id=uploaded.id,
                endpoint=CHAT_URL,
                completion_window="24h",
                metadata={"labmgr_record": record.id, "labmgr_question": label[:500]},
            )
        except Exception as error:
            failure = classify(error, base_url=endpoint.base_url)
            self.records.finish(record.id, "released", failure.message)
            if failure.kind is FailureKind.STOP:
                self.no_credits = f"{model}: {failure.message}"
                self.outcome.stopped = self.outcome.stopped or self.no_credits
            settle = self._retry if failure.kind is FailureKind.RETRY else self._give_up
            for item in _items(got):
                settle(item, f"batch not created: {failure.message}")
            return
        except BaseException:  # Ctrl-C: the batch may exist; the next run looks for it at once
            self.records.let_go(record.id)
            raise
        self.in_flight[record.id] = price
        self.records.submitted(record.id, uploaded.id, batch.id, batch.status)
        record.state, record.file_id, record.batch_id = "submitted", uploaded.id, batch.id
        record.status, record.requests = batch.status, len(got)
        self.watched[record.id] = record
        self.progress.update(record, batch.status)

    def _not_cached(self, record: BatchRecord, got: list[BatchLine]) -> list[BatchLine]:
        """The claimed lines less samples stored since this run looked, and less those a
        synchronous run claimed meanwhile (it claims, then looks at the batches; this run
        did the reverse: of two racing runs at least one sees the other)."""
        items = _items(got)
        bought_now = self.ctx.cache.claimed(items)
        skipped = self._mark_cached(items) | bought_now
        if not skipped:
            return got
        left = set(items) - skipped
        kept = [kept for line in got if (kept := line.keeping(left)).sample_ixs]
        self.bought_now |= {item for item in bought_now if not self.wanted[item].done}
        if not kept:
            self.records.finish(record.id, "released", "answered meanwhile by another run")
        else:
            self.records.unclaim(record.id, [item for item in items if item in skipped])
        return kept

    def _enqueued(self, family: tuple[str, str]) -> float:
        """Tokens of this run's unfinished batches of one (endpoint, model family)."""
        return sum(
            record.tokens
            for record in self.watched.values()
            if (record.endpoint_id, guess_family(record.model)) == family
            and record.status not in FINAL_STATUSES
        )

    def _poll(self) -> bool:
        """Look at every watched batch once, collecting those that finished; True when any
        record ended."""
        ended = False
        for record_id, record in list(self.watched.items()):
            if record.state != "submitted" or record.owner != self.owner:
                fresh = self.records.get(record_id)
                if fresh is None or fresh.state not in ACTIVE_STATES:
                    self.watched.pop(record_id)
                    if fresh is not None:  # collected (or released) elsewhere: what it
                        # stored is in the cache, anything else of ours is sent again
                        self._mark_cached([i for i, want in self.wanted.items() if not want.done])
                    ended = True
                    continue
                record = self.watched[record_id] = fresh
                if record.state == "submitting":
                    if record.lease_until < self.records.now():
                        ended |= self._adopt(record)
                    continue
                if record.state == "collecting" and record.lease_until >= self.records.now():
                    continue
            assert record.batch_id is not None  # submitted: only those are looked at
            try:
                endpoint = self._endpoint(record)
                batch = self._client(endpoint).batches.retrieve(record.batch_id)
            except NoEndpointError as error:
                self._drop(record, error.message)
                ended = True
                continue
            except Exception as error:
                failure = classify(error)
                if failure.kind is FailureKind.RETRY:
                    continue  # look again next time
                self._drop(record, f"cannot read batch {record.batch_id}: {failure.message}")
                ended = True
                continue
            counts = batch.request_counts
            self.progress.update(
                record,
                batch.status,
                None if counts is None else counts.completed + counts.failed,
                None if counts is None else counts.failed,
            )
            if batch.status != record.status:
                record.status = batch.status
                self.records.set_status(record.id, batch.status)
            if batch.status in FINAL_STATUSES:
                if self.records.start_collecting(record.id, self.owner, COLLECT_LEASE):
                    try:
                        collected = self._collect(record, batch, self._client(endpoint))
                    except BaseException:  # Ctrl-C: the next run collects it at once
                        self.records.let_go(record.id)
                        raise
                    if collected:
                        self.watched.pop(record_id)
                else:
                    record.state = "collecting"
                ended = True
        return ended

    def _adopt(self, record: BatchRecord) -> bool:
        """A record whose submitter died: find its batch by the record id in the batches'
        metadata, or release its samples."""
        try:
            client = self._client(self._endpoint(record))
            for batch in client.batches.list(limit=100):
                if (batch.metadata or {}).get("labmgr_record") == record.id:
                    self.records.submitted(record.id, batch.input_file_id, batch.id, batch.status)
                    record.state, record.owner = "submitted", ""
                    record.batch_id, record.status = batch.id, batch.status
                    return False
                if batch.created_at < record.created - 60:
                    break
        except NoEndpointError as error:  # another key's: left for a run that has it
            self._drop(record, error.message)
            return True
        except Exception:  # cannot look now: the next look tries again
            return False
        self.records.finish(record.id, "released", "its batch was never created")
        self.watched.pop(record.id, None)
        return True

    def _collect(self, record: BatchRecord, batch: Any, client: openai.OpenAI) -> bool:
        """Read a finished batch into the cache, line by line; its samples are settled or
        free again. False when its files cannot be read now (tried again at the next look,
        or, failing for good, left for a later run)."""
        lines = self.records.lines(record.id)
        if batch.status == "failed":
            self.in_flight.pop(record.id, None)
            self._failed_batch(record, batch, lines)
            return True
        results: dict[str, LineResult] = {}
        try:
            for file_id in (batch.output_file_id, batch.error_file_id):
                if file_id:
                    results.update(read_results(client.files.content(file_id).content))
        except Exception as error:
            self.records.let_go(record.id)
            failure = classify(error)
            if failure.kind is not FailureKind.RETRY:
                self._drop(record, f"cannot read the output of batch {batch.id}: {failure.message}")
            return False
        self.in_flight.pop(record.id, None)  # what it cost is in the outcome now
        cancelled = f"batch {batch.id} was cancelled before this line ran; run again to send it"
        for line in lines:
            result = results.get(line.custom_id) or LineResult(
                None, None, None, f"not in the output of batch {batch.id}"
            )
            items = [(line.request_key, ix) for ix in line.sample_ixs]
            if result.body is not None:
                self._store(record, line, result.body)
            elif result.code == "batch_cancelled":
                for item in items:
                    if record.id in self.cancelled_before:  # before this run: sent again
                        self._retry(item, cancelled)
                    else:  # while this run waited: the rest is for the next run
                        self._give_up(item, cancelled, record_error=False)
            elif result.retryable:
                for item in items:
                    self._retry(item, f"batch {batch.id}: {result.message}")
            else:
                self._line_failed(record, line.request_key, line.sample_ixs, result.message)
        self.records.finish(record.id, "collected")
        return True

    def _store(self, record: BatchRecord, line: BatchLine, body: dict[str, Any]) -> None:
        key = line.request_key
        try:
            read = read_choices(body, line.sample_ixs, line.logprobs)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            message = f"malformed response: {type(error).__name__}: {error}"
            self._line_failed(record, key, line.sample_ixs, message)
            return
        price = self.ctx.price(record.model, read.prompt_tokens, read.completion_tokens)
        self.outcome.count(read, (price or 0.0) * self.discount)
        if read.stored:
            self.ctx.cache.store_many([(key, record.model, record.label, read.stored)])
            self.outcome.samples += len(read.stored)
            for ix, _ in read.stored:
                if (key, ix) in self.wanted:
                    self.wanted[(key, ix)].done = True
        for ix, message in read.errors.items():
            self._line_failed(record, key, [ix], message)

    def _line_failed(
        self, record: BatchRecord, key: str, sample_ixs: Sequence[int], message: str
    ) -> None:
        """Samples of a line that cannot succeed: recorded as errors, whoever wants them."""
        self.ctx.cache.record_errors(key, record.model, record.label, sample_ixs, message=message)
        for ix in sample_ixs:
            self._give_up((key, ix), message, record_error=False)

    def _failed_batch(self, record: BatchRecord, batch: Any, lines: Sequence[Any]) -> None:
        """A batch refused whole: over the enqueued-token limit (learn it, send again in
        smaller batches), or invalid (every sample gets the reason)."""
        errors = list(getattr(batch.errors, "data", None) or [])
        message = "; ".join(f"{e.code}: {e.message}" for e in errors) or "the batch failed"
        self.records.finish(record.id, "collected", message)
        if any(e.code == "token_limit_exceeded" for e in errors):
            family = (record.endpoint_id, guess_family(record.model))
            learned = queue_limit_of(message)
            known = self.queue_limits.get(family)
            # Unknown limit: the batch was too large, so aim below what it asked.
            self.queue_limits[family] = float(
                learned or min(known or record.tokens, record.tokens) / 2
            )
            alone = self._enqueued(family) == 0
            self.queue_refusals[family] = self.queue_refusals.get(family, 0) + int(alone)
            if self.queue_refusals[family] < self.settings.batch_max_rounds + 2:
                return  # the samples are free again: sent in smaller batches
        for item in _items(lines):
            self._give_up(item, f"batch {batch.id} failed: {message}")

    def _drop(self, record: BatchRecord, message: str) -> None:
        """Stop watching a batch that cannot be read (its samples get the reason; the record
        stays for a run that can read it)."""
        self.watched.pop(record.id, None)
        covered = self.records.covering(self.wanted)
        for item, record_id in covered.items():
            if record_id == record.id:
                self._give_up(item, message, record_error=False)

    def _mark_cached(self, items: Collection[BatchItem]) -> set[BatchItem]:
        """Those of `items` found in the cache (stored by another process), settled."""
        cached = self.ctx.cache.landed(items) if items else set()
        for item in cached:
            self.wanted[item].done = True
        return cached

    def _retry(self, item: BatchItem, message: str) -> None:
        """Send a sample in a later batch, unless it was sent `batch_max_rounds` times."""
        want = self.wanted.get(item)
        if want is not None:
            want.attempts += 1
            want.error = message
            if want.attempts >= self.settings.batch_max_rounds:
                self._give_up(item, f"gave up after {want.attempts} batches: {message}")

    def _give_up(self, item: BatchItem, message: str, *, record_error: bool = True) -> None:
        want = self.wanted.get(item)
        if want is None or want.done:
            return
        want.done = True
        self.outcome.errors[item] = message
        if record_error:
            self.ctx.cache.record_errors(
                item[0], want.request.model, want.label, [item[1]], message=message
            )

    def _give_up_lines(self, lines: Iterable[PlannedLine], message: str) -> None:
        for item in _items(line.line for line in lines):
            self._give_up(item, message)

    def _leave_waiting(self) -> None:
        """Not waiting: each open sample says which batch holds it."""
        open_items = [item for item, want in self.wanted.items() if not want.done]
        covered = self.records.covering(open_items)
        for item in open_items:
            if item not in covered and item not in self.bought_now:  # in no batch
                why = self.wanted[item].error or "the enqueued-token limit is full"
                self.outcome.errors[item] = f"not sent: {why}; run again to send it"
                continue
            self.outcome.pending += 1
            if item not in covered:
                self.outcome.errors[item] = (
                    "being bought now by another run; run again to read it from the cache"
                )
                continue
            where = where_held(self.watched.get(covered.get(item, "")))
            self.outcome.errors[item] = (
                f"waiting for {where}; run again or `labmgr batches collect` to collect it"
            )


def _items(lines: Iterable[BatchLine]) -> list[BatchItem]:
    return [(line.request_key, ix) for line in lines for ix in line.sample_ixs]
