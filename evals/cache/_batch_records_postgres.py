"""Batch records in a PostgreSQL database (psycopg 3, one connection per thread), for a
cache shared by several machines: the tables carry a `cache_` prefix (the cache may share a
database with the lab's jobs registry), and leases use the server's clock only, so the
clocks of the machines sharing the cache never meet."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from evals.cache._batch_records import BatchRecords
from evals.cache._pg_url import conninfo_of
from evals.errors import CacheError

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresBatchRecords"]

_SCHEMA_LOCK = 0x6C626272  # pg_advisory_xact_lock key: one creator of these tables at a time
_SCHEMA = """
CREATE TABLE IF NOT EXISTS cache_batch_records (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    label TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    lease_until DOUBLE PRECISION NOT NULL,
    file_id TEXT,
    batch_id TEXT,
    status TEXT,
    requests INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    tokens BIGINT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    message TEXT
);
CREATE INDEX IF NOT EXISTS cache_batch_records_by_state
    ON cache_batch_records (state, created);
CREATE TABLE IF NOT EXISTS cache_batch_items (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    record_id TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    logprobs INTEGER NOT NULL,
    PRIMARY KEY (request_key, sample_ix)
);
CREATE INDEX IF NOT EXISTS cache_batch_items_by_record
    ON cache_batch_items (record_id, custom_id);
"""


class PostgresBatchRecords(BatchRecords):
    """Batch records in `cache_batch_records` and `cache_batch_items` of a PostgreSQL
    database named by a SQLAlchemy URL (`postgresql+psycopg://user@host/db`)."""

    records_table = "cache_batch_records"
    items_table = "cache_batch_items"
    placeholder = "%s"

    def __init__(self, url: str) -> None:
        import psycopg

        self.driver_errors = (psycopg.Error,)
        self._conninfo, self.location = conninfo_of(url)
        self._local = threading.local()
        self._ready = False

    def _connection(self) -> psycopg.Connection[Any]:
        import psycopg

        connection: psycopg.Connection[Any] | None = getattr(self._local, "connection", None)
        if connection is not None and connection.closed:
            connection = None
        if connection is None:
            connection = psycopg.connect(self._conninfo, autocommit=True)
            if not self._ready:
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    connection.execute(_SCHEMA)
                self._ready = True
            self._local.connection = connection
        return connection

    @contextmanager
    def _transaction(self, connection: Any) -> Iterator[Any]:
        with connection.transaction():
            yield connection

    def _error(self, error: Exception) -> CacheError:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return CacheError(
            f"cannot keep batch records in the response cache at {self.location}: {first}.",
            hint="Check that the PostgreSQL server is up and the user may create tables.",
        )

    def now(self) -> float:
        with self._cursor() as cursor:
            cursor.execute("SELECT extract(epoch from clock_timestamp())")
            return float(cursor.fetchone()[0])

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
