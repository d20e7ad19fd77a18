"""What `labmgr batches list | collect | cancel` do, from Python.

from evals.runner import run_context, list_batches, collect_batches, cancel_batches
ctx = run_context(lab=settings)
list_batches(ctx, refresh=True)     # the records, with each live batch's status looked up
collect_batches(ctx, wait=True)     # every batch in flight, waited for and read into the cache
cancel_batches(ctx, ["batch_…"])    # cancel (what finished stays; a re-run sends the rest)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evals.cache import ACTIVE_STATES, BatchRecord
from evals.errors import RunOptionsError
from evals.runner._context import RunContext
from evals.runner._outcome import RunOutcome


@dataclass(frozen=True)
class BatchState:
    """A batch record and, when looked up, what the API says of it now."""

    record: BatchRecord
    status: str | None
    completed: int | None = None
    failed: int | None = None
    problem: str | None = None
    """Why the batch could not be looked up."""


def _ask(ctx: RunContext, records: Sequence[BatchRecord], ask: str) -> dict[str, BatchState]:
    """Each record's state after the Batch API's `ask` ("retrieve", "cancel"), by id."""
    from evals.runner._batch_run import BatchRun

    run = BatchRun(ctx, ctx.settings.updated(progress=False), title="batches")
    states = {}
    try:
        for record in records:
            try:
                batch = getattr(run.batches(record), ask)(record.batch_id)
            except Exception as error:  # shown per batch: one unreadable batch hides no other
                states[record.id] = BatchState(record, record.status, problem=run.describe(error))
                continue
            if batch.status != record.status:
                ctx.cache.batches.set_status(record.id, batch.status)
            counts = batch.request_counts
            states[record.id] = BatchState(
                record, batch.status, counts and counts.completed, counts and counts.failed
            )
    finally:
        run.close()
    return states


def list_batches(
    ctx: RunContext, *, active_only: bool = False, refresh: bool = False, limit: int = 200
) -> list[BatchState]:
    """The cache's batch records, newest first; `refresh` asks the API about those in flight."""
    records = ctx.cache.batches.records(active_only=active_only, limit=limit)
    live = [r for r in records if r.state in ACTIVE_STATES and r.batch_id is not None]
    looked = _ask(ctx, live, "retrieve") if refresh else {}
    return [looked.get(record.id) or BatchState(record, record.status) for record in records]


def collect_batches(ctx: RunContext, *, wait: bool = True) -> RunOutcome:
    """Read every batch in flight into the cache, waiting for those running unless `wait` is
    False (failed lines are left to the run that wants them)."""
    from evals.runner._batch_run import BatchRun

    run = BatchRun(ctx, ctx.settings.updated(batch_wait=wait), title="collecting")
    for record in ctx.cache.batches.records(active_only=True, limit=100_000):
        run.watch(record.id)
    return run.run([])


def cancel_batches(ctx: RunContext, batch_ids: Sequence[str] | None = None) -> list[BatchState]:
    """Cancel batches in flight (all, or those named by batch or record id); what they
    finished is collected later, the rest sent again by the next run that wants it."""
    records = ctx.cache.batches.records(active_only=True, limit=100_000)
    if batch_ids is not None:
        wanted = set(batch_ids)
        unknown = wanted - {r.batch_id for r in records} - {r.id for r in records}
        if unknown:
            raise RunOptionsError(
                f"no batch in flight with id {', '.join(sorted(unknown))}",
                hint="`labmgr batches list` shows the batches in flight.",
            )
        records = [r for r in records if r.batch_id in wanted or r.id in wanted]
    cancelled = _ask(ctx, [r for r in records if r.batch_id is not None], "cancel")
    unsent = {r.id: BatchState(r, r.status, problem="not submitted yet") for r in records}
    return [cancelled.get(record.id) or unsent[record.id] for record in records]
