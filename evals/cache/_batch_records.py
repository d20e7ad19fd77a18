"""Batch records: the batches in flight for the cache's samples, in the cache's database, so
every process using the cache finds them. Inserting a sample's `batch_items` row is its claim.

States: `submitting` (leased) → `submitted` (batch id recorded before anyone waits) →
`collecting` (leased) → `collected`; `released`: given up before its batch existed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Container, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import astuple, dataclass, field, fields
from typing import Any

from evals.cache._backend import CacheBackend
from evals.cache._schema import BATCH_SCHEMA

ACTIVE_STATES = ("submitting", "submitted", "collecting")
"""States whose items are claimed."""

BatchItem = tuple[str, int]
"""One sample: (request key, sample index)."""


def new_record_id() -> str:
    """A record id, also sent as the batch's `metadata.labmgr_record`."""
    return "lbr_" + uuid.uuid4().hex[:20]


@dataclass(frozen=True)
class BatchLine:
    """One line of a batch input file: one request, several samples through `n`."""

    custom_id: str
    request_key: str
    sample_ixs: tuple[int, ...]
    logprobs: bool = False

    def keeping(self, items: Container[BatchItem]) -> BatchLine:
        """This line with only its samples in `items`."""
        ixs = tuple(ix for ix in self.sample_ixs if (self.request_key, ix) in items)
        return BatchLine(self.custom_id, self.request_key, ixs, self.logprobs)


@dataclass
class BatchRecord:
    """A batch asked for by this cache."""

    id: str
    endpoint_id: str
    """`Endpoint.id`: base URL, key *name*, organization and project (never the key)."""
    base_url: str
    model: str
    label: str
    """The question name the samples are cached under."""
    state: str = "submitting"
    owner: str = ""
    lease_until: float = 0.0
    file_id: str | None = None
    batch_id: str | None = None
    status: str | None = None
    """The batch's status when last seen (`in_progress`, `completed`, `expired`, …)."""
    requests: int = 0
    samples: int = 0
    tokens: int = 0
    """The tokens the batch enqueues, as estimated."""
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    message: str | None = None
    """Why a record ended without its answers, if it did."""


_COLUMNS = ", ".join(f.name for f in fields(BatchRecord))


class _Statements:
    """A cursor whose statements are written with `?` and `{p}` (`CacheBackend.sql`)."""

    def __init__(self, cursor: Any, backend: CacheBackend) -> None:
        self.cursor, self.sql = cursor, backend.sql

    def execute(self, statement: str, values: Sequence[Any] = ()) -> Any:
        self.cursor.execute(self.sql(statement), values)
        return self.cursor

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        self.cursor.executemany(self.sql(statement), rows)


class BatchRecords:
    """The batch records of a cache, in two tables of its database (made on first use)."""

    def __init__(self, backend: CacheBackend) -> None:
        self.backend = backend
        self._ready = False

    def now(self) -> float:
        return self.backend.now()

    @contextmanager
    def _cursor(self, *, write: bool = False) -> Iterator[_Statements]:
        backend = self.backend
        try:
            connection = backend.connect()
            if not self._ready:
                with backend.schema_lock(connection):
                    backend.run_script(connection, BATCH_SCHEMA)
                self._ready = True
            with backend.transaction(connection) if write else nullcontext():
                yield _Statements(connection.cursor(), backend)
        except backend.driver_errors() as error:
            raise backend.explain("keep batch records in", error) from None

    def _update(self, statement: str, values: tuple[object, ...]) -> int:
        with self._cursor() as cursor:
            return int(cursor.execute(statement, values).rowcount)

    def claim(
        self, record: BatchRecord, lines: Sequence[BatchLine], lease_seconds: float
    ) -> list[BatchLine]:
        """Insert `record` (leased to `record.owner`) with the samples of `lines` nobody else
        claimed; returns the lines it got, with only its samples (no record when none)."""
        rows = [
            (line.request_key, ix, record.id, line.custom_id, int(line.logprobs))
            for line in lines
            for ix in line.sample_ixs
        ]
        with self._cursor(write=True) as cursor:
            record.lease_until = self.now() + lease_seconds
            cursor.executemany(
                "INSERT INTO {p}batch_items VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (request_key, sample_ix) DO NOTHING",
                rows,
            )
            mine = cursor.execute(
                "SELECT request_key, sample_ix FROM {p}batch_items WHERE record_id = ?",
                (record.id,),
            )
            got = {(key, int(ix)) for key, ix in mine.fetchall()}
            kept = [kept for line in lines if (kept := line.keeping(got)).sample_ixs]
            if kept:
                record.requests, record.samples = len(kept), len(got)
                marks = ", ".join("?" * len(fields(BatchRecord)))
                cursor.execute(
                    f"INSERT INTO {{p}}batch_records ({_COLUMNS}) VALUES ({marks})",
                    astuple(record),
                )
        return kept

    def unclaim(self, record_id: str, items: Sequence[BatchItem]) -> None:
        """Give back some of a record's samples before its batch is created."""
        with self._cursor() as cursor:
            cursor.executemany(
                "DELETE FROM {p}batch_items WHERE request_key = ? AND sample_ix = ? "
                "AND record_id = ?",
                [(key, ix, record_id) for key, ix in items],
            )

    def let_go(self, record_id: str) -> None:
        """End a `submitting` or `collecting` record's lease now: the next look (of any run)
        looks for its batch, or collects it, at once."""
        self._update(
            "UPDATE {p}batch_records SET lease_until = 0 WHERE id = ? "
            "AND state IN ('submitting', 'collecting')",
            (record_id,),
        )

    def submitted(self, record_id: str, file_id: str, batch_id: str, status: str) -> None:
        self._update(
            "UPDATE {p}batch_records SET state = 'submitted', file_id = ?, batch_id = ?, "
            "status = ?, updated = ? WHERE id = ?",
            (file_id, batch_id, status, time.time(), record_id),
        )

    def set_status(self, record_id: str, status: str) -> None:
        self._update(
            "UPDATE {p}batch_records SET status = ?, updated = ? WHERE id = ? "
            "AND (status IS NULL OR status <> ?)",
            (status, time.time(), record_id, status),
        )

    def start_collecting(self, record_id: str, owner: str, lease_seconds: float) -> bool:
        """Take the right to read a finished batch's output (True for one process only)."""
        now = self.now()
        taken = self._update(
            "UPDATE {p}batch_records SET state = 'collecting', owner = ?, lease_until = ?, "
            "updated = ? WHERE id = ? AND (state = 'submitted' OR "
            "(state = 'collecting' AND lease_until < ?))",
            (owner, now + lease_seconds, time.time(), record_id, now),
        )
        return taken == 1

    def finish(self, record_id: str, state: str, message: str | None = None) -> None:
        """End a record (`collected`, `released`): its samples are free again."""
        with self._cursor(write=True) as cursor:
            cursor.execute("DELETE FROM {p}batch_items WHERE record_id = ?", (record_id,))
            cursor.execute(
                "UPDATE {p}batch_records SET state = ?, message = COALESCE(?, message), "
                "updated = ? WHERE id = ?",
                (state, message, time.time(), record_id),
            )

    def covering(self, items: Iterable[BatchItem]) -> dict[BatchItem, str]:
        """The live record holding each of these samples that one holds."""
        found: dict[BatchItem, str] = {}
        wanted = set(items)
        if not wanted:
            return found
        with self._cursor() as cursor:
            if not cursor.execute("SELECT EXISTS (SELECT 1 FROM {p}batch_items)").fetchone()[0]:
                return found
            for key in {key for key, _ in wanted}:
                rows = cursor.execute(
                    "SELECT sample_ix, record_id FROM {p}batch_items WHERE request_key = ?", (key,)
                ).fetchall()
                for ix, record_id in rows:
                    if (key, int(ix)) in wanted:
                        found[(key, int(ix))] = record_id
        return found

    def get(self, record_id: str) -> BatchRecord | None:
        with self._cursor() as cursor:
            row = cursor.execute(
                f"SELECT {_COLUMNS} FROM {{p}}batch_records WHERE id = ?", (record_id,)
            ).fetchone()
        return None if row is None else BatchRecord(*row)

    def lines(self, record_id: str) -> list[BatchLine]:
        """A record's lines, in file order."""
        with self._cursor() as cursor:
            rows = cursor.execute(
                "SELECT custom_id, request_key, sample_ix, logprobs FROM {p}batch_items "
                "WHERE record_id = ? ORDER BY custom_id, sample_ix",
                (record_id,),
            ).fetchall()
        grouped: dict[str, tuple[str, list[int], bool]] = {}
        for custom_id, key, ix, logprobs in rows:
            grouped.setdefault(custom_id, (key, [], bool(logprobs)))[1].append(int(ix))
        return [
            BatchLine(custom_id, key, tuple(ixs), logprobs)
            for custom_id, (key, ixs, logprobs) in grouped.items()
        ]

    def records(self, *, active_only: bool = False, limit: int = 200) -> list[BatchRecord]:
        """Records, newest first."""
        if not self.backend.exists():
            return []
        where = f" WHERE state IN {ACTIVE_STATES!r}" if active_only else ""
        with self._cursor() as cursor:
            rows = cursor.execute(
                f"SELECT {_COLUMNS} FROM {{p}}batch_records{where} ORDER BY created DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [BatchRecord(*row) for row in rows]
