"""Batch records: which batches are in flight for the cache's samples, kept in the cache's own
database so that any process using the cache (a re-run, `labmgr batches collect`, another
machine on a shared cache) finds them instead of submitting again.

Two tables. `batch_records` has one row per batch this cache asked for: where (endpoint id,
never a key), which model and question, its state, the file and batch ids once known, and
a lease while it is being submitted. `batch_items` has one row per sample a live record
covers, `(request_key, sample_ix)` its primary key: inserting it is the claim, so two
processes never put one sample into two batches. A collected (or abandoned) record loses its
items; its row stays for `labmgr batches list`.

States: `submitting` (items claimed, file and batch being created; the lease says how long
to trust that) → `submitted` (batch id recorded, before anyone waits) → `collecting` (one
process reads the output) → `collected`. `released` is a record given up before its batch
existed. `BatchRecords` writes them once in SQL; `SqliteBatchRecords` keeps the tables in the
cache's SQLite file, `evals.cache._batch_records_postgres.PostgresBatchRecords` in a
PostgreSQL database.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.errors import CacheError

__all__ = [
    "ACTIVE_STATES",
    "BatchItem",
    "BatchLine",
    "BatchRecord",
    "BatchRecords",
    "SqliteBatchRecords",
    "new_record_id",
]

ACTIVE_STATES = ("submitting", "submitted", "collecting")
"""States whose items are claimed: nobody else submits those samples."""

BatchItem = tuple[str, int]
"""One sample: (request key, sample index)."""


def new_record_id() -> str:
    """A record id, also sent as the batch's `metadata.labmgr_record` (to find a batch whose
    id was never recorded)."""
    return "lbr_" + uuid.uuid4().hex[:20]


@dataclass(frozen=True)
class BatchLine:
    """One line of a batch input file: one request, several samples through `n`."""

    custom_id: str
    request_key: str
    sample_ixs: tuple[int, ...]
    logprobs: bool = False
    """Whether the answer is read from the first token's logprobs."""


@dataclass
class BatchRecord:
    """A batch asked for by this cache (see the module docstring for its states)."""

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
    """The tokens the batch enqueues, as estimated (prompt + completion budget × n)."""
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    message: str | None = None
    """Why a record ended without its answers (a failed batch's error), if it did."""


_COLUMNS = (
    "id, endpoint_id, base_url, model, label, state, owner, lease_until, file_id, batch_id, "
    "status, requests, samples, tokens, created, updated, message"
)


class BatchRecords(ABC):
    """Where a cache keeps its batch records: two tables of a SQL database, written once for
    every dialect; a subclass gives a connection per thread, its placeholder style, its clock
    and its errors (`?` in the statements below becomes the dialect's placeholder)."""

    records_table = "batch_records"
    items_table = "batch_items"

    # ---- what a dialect provides ----------------------------------------------------------

    @abstractmethod
    def _connection(self) -> Any:
        """This thread's DB-API connection, in autocommit mode, tables made."""

    @abstractmethod
    def _transaction(self, connection: Any) -> AbstractContextManager[Any]:
        """One transaction that takes the write lock at once."""

    @abstractmethod
    def _error(self, error: Exception) -> CacheError: ...

    @abstractmethod
    def now(self) -> float:
        """The clock leases are kept by (the database server's, where there is one)."""

    driver_errors: tuple[type[Exception], ...] = ()
    placeholder = "?"

    def _sql(self, text: str) -> str:
        text = text.replace("batch_records", self.records_table)
        text = text.replace("batch_items", self.items_table)
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def _caught(self) -> tuple[type[Exception], ...]:
        return (OSError, *self.driver_errors)

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        try:
            connection = self._connection()
            yield connection.cursor()
        except self._caught() as error:
            raise self._error(error) from None

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        try:
            connection = self._connection()
            with self._transaction(connection):
                yield connection.cursor()
        except self._caught() as error:
            raise self._error(error) from None

    # ---- the interface --------------------------------------------------------------------

    def claim(
        self, record: BatchRecord, lines: Sequence[BatchLine], lease_seconds: float
    ) -> list[BatchLine]:
        """Insert `record` (state `submitting`, leased to `record.owner`) with the samples
        of `lines` nobody else claimed; returns the lines it got, each with only its own
        samples (the record is not kept when it got none). Atomic per sample."""
        rows = [
            (line.request_key, ix, record.id, line.custom_id, int(line.logprobs))
            for line in lines
            for ix in line.sample_ixs
        ]
        with self._writing() as cursor:
            record.lease_until = self.now() + lease_seconds
            cursor.executemany(
                self._sql(
                    "INSERT INTO batch_items VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (request_key, sample_ix) DO NOTHING"
                ),
                rows,
            )
            cursor.execute(
                self._sql("SELECT request_key, sample_ix FROM batch_items WHERE record_id = ?"),
                (record.id,),
            )
            got = {(key, int(ix)) for key, ix in cursor.fetchall()}
            kept = []
            for line in lines:
                ixs = tuple(ix for ix in line.sample_ixs if (line.request_key, ix) in got)
                if ixs:
                    kept.append(BatchLine(line.custom_id, line.request_key, ixs, line.logprobs))
            if kept:
                record.requests, record.samples = len(kept), len(got)
                cursor.execute(
                    self._sql(
                        f"INSERT INTO batch_records ({_COLUMNS}) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    ),
                    _row(record),
                )
        return kept

    def _update(self, sql: str, values: tuple[object, ...]) -> int:
        with self._cursor() as cursor:
            cursor.execute(self._sql(sql), values)
            return int(cursor.rowcount)

    def unclaim(self, record_id: str, items: Sequence[BatchItem]) -> None:
        """Give back some of a record's samples before its batch is created (found cached
        after claiming: another process answered them meanwhile)."""
        with self._cursor() as cursor:
            cursor.executemany(
                self._sql(
                    "DELETE FROM batch_items WHERE request_key = ? AND sample_ix = ? "
                    "AND record_id = ?"
                ),
                [(key, ix, record_id) for key, ix in items],
            )

    def let_go(self, record_id: str) -> None:
        """End a `submitting` record's lease now (its process was interrupted while creating
        the batch): the next run looks for the batch at once instead of after the lease."""
        self._update(
            "UPDATE batch_records SET lease_until = 0 WHERE id = ? AND state = 'submitting'",
            (record_id,),
        )

    def submitted(self, record_id: str, file_id: str, batch_id: str, status: str) -> None:
        """The batch exists: record its ids (before anyone waits for it)."""
        self._update(
            "UPDATE batch_records SET state = 'submitted', file_id = ?, batch_id = ?, "
            "status = ?, updated = ? WHERE id = ?",
            (file_id, batch_id, status, time.time(), record_id),
        )

    def set_status(self, record_id: str, status: str) -> None:
        """The batch's status as last seen."""
        self._update(
            "UPDATE batch_records SET status = ?, updated = ? WHERE id = ? "
            "AND (status IS NULL OR status <> ?)",
            (status, time.time(), record_id, status),
        )

    def start_collecting(self, record_id: str, owner: str, lease_seconds: float) -> bool:
        """Take the right to read a finished batch's output (True for one process only;
        a collector that died is replaced once its lease ends)."""
        now = self.now()
        return (
            self._update(
                "UPDATE batch_records SET state = 'collecting', owner = ?, lease_until = ?, "
                "updated = ? WHERE id = ? AND (state = 'submitted' OR "
                "(state = 'collecting' AND lease_until < ?))",
                (owner, now + lease_seconds, time.time(), record_id, now),
            )
            == 1
        )

    def finish(self, record_id: str, state: str, message: str | None = None) -> None:
        """End a record (`collected`, `released`): its samples are claimable again."""
        with self._writing() as cursor:
            cursor.execute(self._sql("DELETE FROM batch_items WHERE record_id = ?"), (record_id,))
            cursor.execute(
                self._sql(
                    "UPDATE batch_records SET state = ?, message = COALESCE(?, message), "
                    "updated = ? WHERE id = ?"
                ),
                (state, message, time.time(), record_id),
            )

    def covering(self, items: Iterable[BatchItem]) -> dict[BatchItem, str]:
        """The live record holding each of these samples (those held by none are absent)."""
        found: dict[BatchItem, str] = {}
        by_key: dict[str, set[int]] = {}
        for key, ix in items:
            by_key.setdefault(key, set()).add(ix)
        if not by_key:
            return found
        with self._cursor() as cursor:
            cursor.execute(self._sql("SELECT EXISTS (SELECT 1 FROM batch_items)"))
            if not cursor.fetchone()[0]:
                return found
            query = self._sql("SELECT sample_ix, record_id FROM batch_items WHERE request_key = ?")
            for key, ixs in by_key.items():
                cursor.execute(query, (key,))
                for ix, record_id in cursor.fetchall():
                    if ix in ixs:
                        found[(key, int(ix))] = record_id
        return found

    def get(self, record_id: str) -> BatchRecord | None:
        with self._cursor() as cursor:
            cursor.execute(
                self._sql(f"SELECT {_COLUMNS} FROM batch_records WHERE id = ?"), (record_id,)
            )
            row = cursor.fetchone()
        return None if row is None else BatchRecord(*row)

    def lines(self, record_id: str) -> list[BatchLine]:
        """A record's lines, in file order."""
        with self._cursor() as cursor:
            cursor.execute(
                self._sql(
                    "SELECT custom_id, request_key, sample_ix, logprobs FROM batch_items "
                    "WHERE record_id = ? ORDER BY custom_id, sample_ix"
                ),
                (record_id,),
            )
            rows = cursor.fetchall()
        grouped: dict[str, tuple[str, list[int], bool]] = {}
        for custom_id, key, ix, logprobs in rows:
            grouped.setdefault(custom_id, (key, [], bool(logprobs)))[1].append(int(ix))
        return [
            BatchLine(custom_id, key, tuple(ixs), logprobs)
            for custom_id, (key, ixs, logprobs) in grouped.items()
        ]

    def records(self, *, active_only: bool = False, limit: int = 200) -> list[BatchRecord]:
        """Records, newest first."""
        where = (
            f" WHERE state IN ({', '.join(repr(s) for s in ACTIVE_STATES)})" if active_only else ""
        )
        with self._cursor() as cursor:
            cursor.execute(
                self._sql(
                    f"SELECT {_COLUMNS} FROM batch_records{where} ORDER BY created DESC LIMIT ?"
                ),
                (limit,),
            )
            rows = cursor.fetchall()
        return [BatchRecord(*row) for row in rows]


_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_records (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    label TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    lease_until REAL NOT NULL,
    file_id TEXT,
    batch_id TEXT,
    status TEXT,
    requests INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    message TEXT
);
CREATE INDEX IF NOT EXISTS batch_records_by_state ON batch_records (state, created);
CREATE TABLE IF NOT EXISTS batch_items (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    record_id TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    logprobs INTEGER NOT NULL,
    PRIMARY KEY (request_key, sample_ix)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS batch_items_by_record ON batch_items (record_id, custom_id);
"""


class SqliteBatchRecords(BatchRecords):
    """Batch records in the cache's SQLite file (tables of their own, made on first use).
    Leases use this machine's clock, the only one the processes sharing the file have."""

    driver_errors = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._ready = False

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA busy_timeout=60000")
            if not self._ready:
                connection.executescript(_SQLITE_SCHEMA)
                self._ready = True
            self._local.connection = connection
        return connection

    @contextmanager
    def _transaction(self, connection: Any) -> Iterator[Any]:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def _error(self, error: Exception) -> CacheError:
        return CacheError(
            f"cannot keep batch records in the response cache {self.path}: {error}.",
            hint="Make the cache folder writable, or use another one.",
        )

    def now(self) -> float:
        return time.time()

    def records(self, *, active_only: bool = False, limit: int = 200) -> list[BatchRecord]:
        if not self.path.exists():
            return []
        return super().records(active_only=active_only, limit=limit)


def _row(record: BatchRecord) -> tuple[object, ...]:
    return (
        record.id,
        record.endpoint_id,
        record.base_url,
        record.model,
        record.label,
        record.state,
        record.owner,
        record.lease_until,
        record.file_id,
        record.batch_id,
        record.status,
        record.requests,
        record.samples,
        record.tokens,
        record.created,
        record.updated,
        record.message,
    )
