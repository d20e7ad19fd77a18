"""Copying a cache into another (a lab moving its SQLite cache into a shared PostgreSQL
database, say): samples and recorded errors in key order, a batch of rows per transaction in
the target; then the batches still in flight, so that the target's runs collect them instead
of buying their samples again.

Rows the target holds are skipped (samples by key; errors by request, sample, time and
message; batch records by id), so a copy run again after an interruption writes only what is
missing. Claims are not copied: they belong to runs buying now, on the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from evals.cache._backend import CacheBackend
from evals.cache._batch_records import BatchRecords
from evals.cache._schema import COPIED_TABLES
from evals.errors import CacheError

_COUNTED = (*COPIED_TABLES, "batches")


@dataclass
class CopyResult:
    """Rows read from the source and rows the target did not hold yet, per table."""

    read: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTED, 0))
    copied: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTED, 0))
    source: str = ""
    target: str = ""


def copy_cache(
    source: CacheBackend,
    target: CacheBackend,
    *,
    batch_rows: int = 2000,
    progress: Callable[[str, int], None] | None = None,
) -> CopyResult:
    """Copy `source` into `target`; `progress(table, rows read so far)` after each batch."""
    result = CopyResult(source=source.location, target=target.location)
    if not source.exists():
        return result
    target.check_writable()
    for table, (names, keys) in COPIED_TABLES.items():
        after = None
        columns = [names.index(key) for key in keys]
        while True:
            rows = source.export_rows(table, after, batch_rows)
            if not rows:
                break
            result.copied[table] += target.import_rows(table, rows)
            result.read[table] += len(rows)
            after = tuple(rows[-1][i] for i in columns)
            if progress is not None:
                progress(table, result.read[table])
            if len(rows) < batch_rows:
                break
    # The batch records in flight, each with the samples it holds and what is left of its
    # lease (one the target has is skipped), each one transaction in the target.
    records = BatchRecords(source)
    try:
        live = records.records(active_only=True, limit=1_000_000)
    except CacheError:  # a read-only source without batch tables has no batches
        return result
    into = BatchRecords(target)
    for record in reversed(live):  # oldest first
        result.read["batches"] += 1
        if into.get(record.id) is None:
            lines = records.lines(record.id)
            lease = max(0.0, record.lease_until - records.now())
            # Samples the target's own batches hold stay theirs: nothing is sent twice.
            if lines and into.claim(record, lines, lease):
                result.copied["batches"] += 1
        if progress is not None:
            progress("batches", result.read["batches"])
    return result
