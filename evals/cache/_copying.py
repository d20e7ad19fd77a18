"""Copying a cache into another (a lab moving its SQLite cache into a shared PostgreSQL
database, say): samples, recorded errors and packs, in key order and in batches, each batch
one transaction in the target.

Rows the target already holds are skipped (samples and packs by their key; errors by request,
sample, time and message), so a copy is idempotent: run again after an interruption, it reads
the source again but writes only what is missing, and never copies a row twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from evals.cache._backend import CacheBackend

__all__ = ["CopyResult", "copy_cache"]

_TABLES = ("samples", "errors", "packs")
_KEY_WIDTH = {"samples": 2, "errors": 3, "packs": 1}
_KEY_COLUMNS = {"samples": (0, 1), "errors": (0, 1, 6), "packs": (0,)}


@dataclass
class CopyResult:
    """Rows read from the source and rows the target did not hold yet, per table."""

    read: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_TABLES, 0))
    copied: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_TABLES, 0))
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
    for table in _TABLES:
        after = None
        columns = _KEY_COLUMNS[table]
        while True:
            rows = source.export_rows(table, after, batch_rows)
            if not rows:
                break
            result.copied[table] += target.import_rows(table, rows)
            result.read[table] += len(rows)
            after = tuple(rows[-1][i] for i in columns)
            assert len(after) == _KEY_WIDTH[table]
            if progress is not None:
                progress(table, result.read[table])
            if len(rows) < batch_rows:
                break
    return result
