"""The cache in one SQLite file (WAL), through the standard `sqlite3` module.

One connection per thread. Each finished request is one short transaction (WAL appends, no
fsync per commit), so a crash loses nothing already paid for; several processes on one
machine share the file through SQLite's own locking (busy timeout 60 s). Claims use the
machine's clock, the only one the processes sharing the file have.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from evals.cache._backend import (
    SAMPLE_COLUMNS,
    SAMPLE_FIELDS,
    SCHEMA_VERSION,
    CacheBackend,
    Item,
    StoredCounts,
    explained,
    export_query,
    scope,
)
from evals.cache._samples import CachedSamples
from evals.errors import CacheError, why_not_writable

if TYPE_CHECKING:
    from evals.cache._batch_records import BatchRecords

__all__ = ["SqliteBackend"]

_BUSY_TIMEOUT_MS = 60_000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS samples (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    model TEXT NOT NULL,
    question TEXT NOT NULL,
    content TEXT,
    logprobs TEXT,
    finish_reason TEXT,
    prompt_tokens REAL NOT NULL,
    completion_tokens REAL NOT NULL,
    created REAL NOT NULL,
    reasoning_tokens REAL,
    PRIMARY KEY (request_key, sample_ix)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS samples_by_question ON samples (question, model);
CREATE TABLE IF NOT EXISTS errors (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    model TEXT NOT NULL,
    question TEXT NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS errors_by_request ON errors (request_key, sample_ix);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
DROP TABLE IF EXISTS packs;
DROP TABLE IF EXISTS frames;
CREATE TABLE IF NOT EXISTS claims (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    owner TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (request_key, sample_ix)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS claims_by_owner ON claims (owner);
"""
_INSERT_SAMPLES = (
    f"INSERT OR IGNORE INTO samples ({', '.join(SAMPLE_COLUMNS)}) VALUES "
    f"({', '.join('?' * len(SAMPLE_COLUMNS))})"
)
_INSERTS = {
    "samples": _INSERT_SAMPLES,
    "errors": "INSERT INTO errors SELECT ?,?,?,?,?,?,? WHERE NOT EXISTS (SELECT 1 FROM errors "
    "WHERE request_key = ?1 AND sample_ix = ?2 AND created = ?7 AND message = ?6)",
}


def _add_reasoning_tokens(connection: sqlite3.Connection) -> None:
    """Upgrade a cache made before schema 3 in place: samples get a nullable
    `reasoning_tokens` column (its old rows say NULL: not recorded)."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(samples)")}
    if "reasoning_tokens" not in columns:
        connection.execute("ALTER TABLE samples ADD COLUMN reasoning_tokens REAL")


@contextmanager
def _transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class SqliteBackend(CacheBackend):
    """The cache in `path` (created with its folder on first write)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.directory = path.parent
        self.location = str(path)
        self._local = threading.local()
        self._ready = False

    # ---- errors a person can cause --------------------------------------------------------

    def driver_errors(self) -> tuple[type[Exception], ...]:
        return (OSError, sqlite3.DatabaseError)

    def explain(self, action: str, error: Exception) -> CacheError:
        if isinstance(error, OSError):
            where = Path(error.filename) if error.filename else self.directory
            return CacheError(
                f"cannot {action} the response cache at {where}: {why_not_writable(where, error)}.",
                hint="Make the cache folder writable, or use another one (`cache=` in Python, "
                "`cache_dir` in the lab's config, `--dir` for `labmgr cache`).",
            )
        text = str(error)
        if "not a database" in text or "malformed" in text:
            return CacheError(
                f"the response cache {self.path} is damaged ({text}).",
                hint="Move the file away (its answers are lost); the next run starts a new cache "
                "and buys what it needs again.",
            )
        if "readonly" in text or "read-only" in text:
            return CacheError(
                f"cannot {action} the response cache {self.path}: it is read-only.",
                hint="Make the file and its folder writable, or use another cache folder.",
            )
        if "unable to open" in text:
            folder = self.directory
            why = (
                f"permission denied on its folder {folder}"
                if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK)
                else "the file or its folder cannot be read or written"
            )
            return CacheError(
                f"cannot open the response cache {self.path}: {why}.",
                hint="Make the cache folder writable, or use another one.",
            )
        if "locked" in text:
            return CacheError(
                f"the response cache {self.path} stayed locked by another process for "
                f"{_BUSY_TIMEOUT_MS // 1000} s.",
                hint="Wait for the other run to finish, then run again.",
            )
        return CacheError(f"cannot {action} the response cache {self.path}: {text}.")

    # ---- connection -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is not None:
            return connection
        if not self._ready:
            self.directory.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        if not self._ready:
            if self._has_schema(connection):
                self._ready = True
            else:
                self._initialise()
        self._local.connection = connection
        return connection

    @staticmethod
    def _has_schema(connection: sqlite3.Connection) -> bool:
        """Whether the schema is complete and current (its version row is written after every
        table), so that opening an existing cache skips the file lock and the schema script."""
        try:
            found = connection.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
        except sqlite3.OperationalError:  # no meta table yet
            return False
        return found is not None and int(found[0]) >= SCHEMA_VERSION

    def _initialise(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.executescript(_SCHEMA)
                _add_reasoning_tokens(connection)
                connection.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) "
                    "DO UPDATE SET value = MAX(CAST(value AS INTEGER), excluded.value)",
                    (str(SCHEMA_VERSION),),
                )
            finally:
                connection.close()
        self._ready = True

    def exists(self) -> bool:
        return self._ready or self.path.exists()

    @explained("write to")
    def check_writable(self) -> None:
        connection = self._connect()
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(
                "INSERT INTO meta VALUES ('write_check', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            )
        finally:
            connection.execute("ROLLBACK")

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    # ---- samples --------------------------------------------------------------------------

    @explained("read")
    def read_all(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        """One primary-key range read per request (measured faster here than one `IN (…)` or
        `json_each` join per question, whose rows must each carry their key)."""
        found: dict[str, CachedSamples] = {}
        cursor = self._connect().cursor()
        query = (
            f"SELECT sample_ix, {SAMPLE_FIELDS} FROM samples WHERE request_key = ? "
            "ORDER BY sample_ix"
        )
        for key in dict.fromkeys(keys):
            rows = cursor.execute(query, (key,)).fetchall()
            if rows:
                found[key] = CachedSamples(rows)
        return found

    @explained("read")
    def read_first(self, wanted: Mapping[str, int]) -> dict[str, CachedSamples]:
        """When all n are cached they are read without their indices (n rows below n are
        exactly those), which a fully cached reload of many samples is dominated by."""
        found: dict[str, CachedSamples] = {}
        cursor = self._connect().cursor()
        first = (
            f"SELECT {SAMPLE_FIELDS} FROM samples WHERE request_key = ? AND sample_ix < ? "
            "ORDER BY sample_ix"
        )
        partial: list[str] = []
        for key, count in wanted.items():
            rows = cursor.execute(first, (key, count)).fetchall()
            if len(rows) == count:
                found[key] = CachedSamples(rows, numbered=False)
            elif rows:
                partial.append(key)
        found.update(self.read_all(partial))
        return found

    @explained("write to")
    def insert_samples(self, rows: Sequence[tuple[Any, ...]]) -> None:
        connection = self._connect()
        insert = _INSERT_SAMPLES
        errors = self._errors_possible(connection)
        if len(rows) == 1 and not errors:
            connection.execute(insert, rows[0])  # autocommit: one statement, one transaction
            return
        with _transaction(connection):
            connection.executemany(insert, rows)
            if errors:
                connection.executemany(
                    "DELETE FROM errors WHERE request_key = ? AND sample_ix = ?",
                    [(row[0], row[1]) for row in rows],
                )

    def _errors_possible(self, connection: sqlite3.Connection) -> bool:
        """Whether the errors table had rows when this thread first looked (or got some)."""
        known: bool | None = getattr(self._local, "errors_possible", None)
        if known is None:
            known = connection.execute("SELECT EXISTS (SELECT 1 FROM errors)").fetchone()[0] == 1
            self._local.errors_possible = known
        return known

    @explained("write to")
    def insert_errors(self, rows: Sequence[tuple[Any, ...]], owner: str | None) -> None:
        connection = self._connect()
        with _transaction(connection):
            connection.executemany("INSERT INTO errors VALUES (?,?,?,?,?,?,?)", rows)
            if owner is not None:
                connection.executemany(
                    "DELETE FROM claims WHERE request_key = ? AND sample_ix = ? AND owner = ?",
                    [(row[0], row[1], owner) for row in rows],
                )
        self._local.errors_possible = True

    # ---- claims ---------------------------------------------------------------------------

    @explained("write to")
    def claim(self, owner: str, items: Sequence[Item], lease_seconds: float) -> set[Item]:
        connection = self._connect()
        now = time.time()
        with _transaction(connection):
            # Claims whose owner died are dropped (those on samples it stored included).
            connection.execute("DELETE FROM claims WHERE expires < ?", (now,))
            connection.executemany(
                "INSERT INTO claims VALUES (?, ?, ?, ?) ON CONFLICT (request_key, sample_ix) "
                "DO UPDATE SET owner = excluded.owner, expires = excluded.expires "
                "WHERE claims.expires < ? OR claims.owner = excluded.owner",
                [(key, ix, owner, now + lease_seconds, now) for key, ix in items],
            )
            mine = connection.execute(
                "SELECT request_key, sample_ix FROM claims WHERE owner = ?", (owner,)
            ).fetchall()
        wanted = set(items)
        return {(str(key), int(ix)) for key, ix in mine if (key, ix) in wanted}

    @explained("write to")
    def renew(self, owner: str, lease_seconds: float) -> int:
        cursor = self._connect().execute(
            "UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + lease_seconds, owner)
        )
        return int(cursor.rowcount)

    @explained("write to")
    def release(self, owner: str, items: Sequence[Item] | None = None) -> None:
        connection = self._connect()
        if items is None:
            connection.execute("DELETE FROM claims WHERE owner = ?", (owner,))
            return
        with _transaction(connection):
            connection.executemany(
                "DELETE FROM claims WHERE request_key = ? AND sample_ix = ? AND owner = ?",
                [(key, ix, owner) for key, ix in items],
            )

    @explained("read")
    def held(self, items: Sequence[Item]) -> set[Item]:
        cursor = self._connect().cursor()
        now = time.time()
        held: set[Item] = set()
        query = "SELECT 1 FROM claims WHERE request_key = ? AND sample_ix = ? AND expires >= ?"
        for key, ix in items:
            if cursor.execute(query, (key, ix, now)).fetchone() is not None:
                held.add((key, ix))
        return held

    def batch_records(self) -> BatchRecords:
        from evals.cache._batch_records import SqliteBatchRecords

        return SqliteBatchRecords(self.path)

    # ---- maintenance ----------------------------------------------------------------------

    @explained("read")
    def counts(self) -> StoredCounts:
        connection = self._connect()
        samples = connection.execute(
            "SELECT question, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) "
            "FROM samples GROUP BY question, model"
        ).fetchall()
        errors = connection.execute(
            "SELECT question, model, COUNT(*) FROM errors GROUP BY question, model"
        ).fetchall()
        claims = connection.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
        size = sum(
            p.stat().st_size
            for p in self.directory.glob(self.path.name + "*")
            if p.is_file() and not p.name.endswith(".lock")
        )
        return StoredCounts.of(samples, errors, int(claims), size)

    @explained("clear")
    def clear(self, question: str | None, model: str | None) -> int:
        where, values = scope(question, model, "?")
        connection = self._connect()
        with FileLock(str(self.path) + ".lock"), _transaction(connection):
            deleted = connection.execute(f"DELETE FROM samples{where}", values).rowcount
            connection.execute(f"DELETE FROM errors{where}", values)
        if not where:
            connection.execute("VACUUM")
        return int(deleted)

    # ---- copying --------------------------------------------------------------------------

    @explained("read")
    def export_rows(
        self, table: str, after: tuple[Any, ...] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        query = export_query(table, table, after is not None, "?")
        rows = self._connect().execute(query, (*(after or ()), limit)).fetchall()
        return [tuple(row) for row in rows]

    @explained("write to")
    def import_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        connection = self._connect()
        with _transaction(connection):
            before = connection.total_changes
            connection.executemany(_INSERTS[table], rows)
            return connection.total_changes - before
