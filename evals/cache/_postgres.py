"""The cache in a PostgreSQL database, through psycopg 3 (one connection per thread).

The tables carry a `cache_` prefix, so the cache may share a database with the lab's jobs
registry. Reads are one statement per chunk of requests (a model's, say), never one per
request: over a network each statement is a round trip. Lease arithmetic of claims uses the
server's clock only (`clock_timestamp()`), so the clocks of the machines sharing the cache
never meet.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any

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
from evals.cache._pg_url import conninfo_of
from evals.cache._samples import CachedSamples
from evals.errors import CacheError

if TYPE_CHECKING:
    import psycopg

    from evals.cache._batch_records import BatchRecords

__all__ = ["PostgresBackend"]


_SCHEMA_LOCK = 0x6C61626D  # pg_advisory_xact_lock key: one schema creator at a time
_NOW = "extract(epoch from clock_timestamp())"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS cache_samples (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    model TEXT NOT NULL,
    question TEXT NOT NULL,
    content TEXT,
    logprobs TEXT,
    finish_reason TEXT,
    prompt_tokens DOUBLE PRECISION NOT NULL,
    completion_tokens DOUBLE PRECISION NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    reasoning_tokens DOUBLE PRECISION,
    PRIMARY KEY (request_key, sample_ix)
);
ALTER TABLE cache_samples ADD COLUMN IF NOT EXISTS reasoning_tokens DOUBLE PRECISION;
CREATE INDEX IF NOT EXISTS cache_samples_by_question ON cache_samples (question, model);
CREATE TABLE IF NOT EXISTS cache_errors (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    model TEXT NOT NULL,
    question TEXT NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS cache_errors_by_request ON cache_errors (request_key, sample_ix);
CREATE TABLE IF NOT EXISTS cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
DROP TABLE IF EXISTS cache_packs;
CREATE TABLE IF NOT EXISTS cache_claims (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    owner TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (request_key, sample_ix)
);
CREATE INDEX IF NOT EXISTS cache_claims_by_owner ON cache_claims (owner);
"""
_INSERTS = {
    "samples": f"INSERT INTO cache_samples ({', '.join(SAMPLE_COLUMNS)}) VALUES "
    f"({', '.join(['%s'] * len(SAMPLE_COLUMNS))}) ON CONFLICT DO NOTHING",
    "errors": "INSERT INTO cache_errors SELECT %(0)s,%(1)s,%(2)s,%(3)s,%(4)s,%(5)s,%(6)s "
    "WHERE NOT EXISTS (SELECT 1 FROM cache_errors WHERE request_key = %(0)s "
    "AND sample_ix = %(1)s AND created = %(6)s AND message = %(5)s)",
}


class PostgresBackend(CacheBackend):
    """The cache in the PostgreSQL database at `url` (a SQLAlchemy URL)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conninfo, self.location = conninfo_of(url)
        self._local = threading.local()
        self._ready = False
        self._lock = threading.Lock()

    def driver_errors(self) -> tuple[type[Exception], ...]:
        import psycopg

        return (psycopg.Error,)

    def explain(self, action: str, error: Exception) -> CacheError:
        self.forget_connection()
        text = " ".join(str(error).split()) or type(error).__name__
        if "password" in text.lower() or "authentication" in text.lower():
            hint = "Check the user and password of the cache URL (LABMGR_CACHE_URL or cache_url)."
        elif "does not exist" in text and "database" in text:
            hint = "Create the database first (createdb), or point the cache URL at one."
        elif "connect" in text.lower() or "connection" in text.lower():
            hint = "Is the PostgreSQL server running and reachable? Check the cache URL."
        elif "read-only" in text or "permission denied" in text:
            hint = "Give the cache URL's user write access to the cache tables."
        else:
            hint = None
        return CacheError(
            f"cannot {action} the response cache at {self.location}: {text}.", hint=hint
        )

    # ---- connection -----------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        connection: psycopg.Connection[Any] | None = getattr(self._local, "connection", None)
        if connection is not None and not connection.closed:
            return connection
        import psycopg

        connection = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10)
        if not self._ready:
            with self._lock:
                if not self._ready:
                    self._initialise(connection)
        self._local.connection = connection
        return connection

    def _initialise(self, connection: psycopg.Connection[Any]) -> None:
        """Create the tables unless their version row says they are current (one creator
        at a time across machines: an advisory lock, held for the transaction)."""
        if connection.execute("SELECT to_regclass('cache_meta')").fetchone() != (None,):
            found = connection.execute(
                "SELECT value FROM cache_meta WHERE key = 'schema_version'"
            ).fetchone()
            if found is not None and int(found[0]) >= SCHEMA_VERSION:
                self._ready = True
                return
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in filter(str.strip, _SCHEMA.split(";")):
                connection.execute(statement)
            connection.execute(
                "INSERT INTO cache_meta VALUES ('schema_version', %s) ON CONFLICT (key) "
                "DO UPDATE SET value = GREATEST(cache_meta.value::int, "
                "EXCLUDED.value::int)::text",
                (str(SCHEMA_VERSION),),
            )
        self._ready = True

    def forget_connection(self) -> None:
        """Drop this thread's connection after an error (the next call connects anew)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            with suppress(Exception):
                connection.close()
            self._local.connection = None

    def close(self) -> None:
        self.forget_connection()

    def exists(self) -> bool:
        return True

    @explained("write to")
    def check_writable(self) -> None:
        connection = self._connect()
        with suppress(_Rollback), connection.transaction():
            connection.execute(
                "INSERT INTO cache_meta VALUES ('write_check', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
            )
            raise _Rollback

    # ---- samples --------------------------------------------------------------------------

    @explained("read")
    def read_all(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        rows = (
            self._connect()
            .execute(
                f"SELECT request_key, sample_ix, {SAMPLE_FIELDS} FROM cache_samples "
                "WHERE request_key = ANY(%s) ORDER BY request_key, sample_ix",
                (wanted,),
            )
            .fetchall()
        )
        return _grouped(rows)

    @explained("read")
    def read_first(self, wanted: Mapping[str, int]) -> dict[str, CachedSamples]:
        """One statement for the whole mapping: the wanted (key, n) pairs are joined to the
        samples as arrays, not sent one request at a time."""
        if not wanted:
            return {}
        rows = (
            self._connect()
            .execute(
                "SELECT s.request_key, s.sample_ix, s.content, s.logprobs, s.finish_reason, "
                "s.prompt_tokens, s.completion_tokens, s.reasoning_tokens "
                "FROM unnest(%s::text[], %s::int[]) "
                "AS w(request_key, n) JOIN cache_samples s ON s.request_key = w.request_key "
                "AND s.sample_ix < w.n ORDER BY s.request_key, s.sample_ix",
                (list(wanted), list(wanted.values())),
            )
            .fetchall()
        )
        found = _grouped(rows)
        partial = [key for key, n in wanted.items() if key in found and len(found[key]) < n]
        if partial:
            found.update(self.read_all(partial))
        return found

    @explained("write to")
    def insert_samples(self, rows: Sequence[tuple[Any, ...]]) -> None:
        connection = self._connect()
        with connection.transaction(), connection.cursor() as cursor:
            cursor.executemany(_INSERTS["samples"], rows)
            cursor.execute(
                "DELETE FROM cache_errors e USING unnest(%s::text[], %s::int[]) AS d(k, i) "
                "WHERE e.request_key = d.k AND e.sample_ix = d.i",
                ([row[0] for row in rows], [row[1] for row in rows]),
            )

    @explained("write to")
    def insert_errors(self, rows: Sequence[tuple[Any, ...]], owner: str | None) -> None:
        connection = self._connect()
        with connection.transaction(), connection.cursor() as cursor:
            cursor.executemany("INSERT INTO cache_errors VALUES (%s,%s,%s,%s,%s,%s,%s)", rows)
            if owner is not None:
                cursor.execute(
                    "DELETE FROM cache_claims c USING unnest(%s::text[], %s::int[]) AS d(k, i) "
                    "WHERE c.request_key = d.k AND c.sample_ix = d.i AND c.owner = %s",
                    ([row[0] for row in rows], [row[1] for row in rows], owner),
                )

    # ---- claims ---------------------------------------------------------------------------

    @explained("write to")
    def claim(self, owner: str, items: Sequence[Item], lease_seconds: float) -> set[Item]:
        if not items:
            return set()
        connection = self._connect()
        # Claims whose owner died are dropped (those on samples it stored included).
        connection.execute(f"DELETE FROM cache_claims WHERE expires < {_NOW}")
        rows = connection.execute(
            "INSERT INTO cache_claims SELECT k, i, %(owner)s, "
            f"{_NOW} + %(lease)s FROM unnest(%(keys)s::text[], %(ixs)s::int[]) AS t(k, i) "
            "ON CONFLICT (request_key, sample_ix) DO UPDATE SET owner = EXCLUDED.owner, "
            f"expires = EXCLUDED.expires WHERE cache_claims.expires < {_NOW} "
            "OR cache_claims.owner = EXCLUDED.owner RETURNING request_key, sample_ix",
            {
                "owner": owner,
                "lease": lease_seconds,
                "keys": [key for key, _ in items],
                "ixs": [ix for _, ix in items],
            },
        ).fetchall()
        return {(str(key), int(ix)) for key, ix in rows}

    @explained("write to")
    def renew(self, owner: str, lease_seconds: float) -> int:
        cursor = self._connect().execute(
            f"UPDATE cache_claims SET expires = {_NOW} + %s WHERE owner = %s",
            (lease_seconds, owner),
        )
        return int(cursor.rowcount)

    @explained("write to")
    def release(self, owner: str, items: Sequence[Item] | None = None) -> None:
        connection = self._connect()
        if items is None:
            connection.execute("DELETE FROM cache_claims WHERE owner = %s", (owner,))
            return
        connection.execute(
            "DELETE FROM cache_claims c USING unnest(%s::text[], %s::int[]) AS d(k, i) "
            "WHERE c.request_key = d.k AND c.sample_ix = d.i AND c.owner = %s",
            ([key for key, _ in items], [ix for _, ix in items], owner),
        )

    @explained("read")
    def held(self, items: Sequence[Item]) -> set[Item]:
        if not items:
            return set()
        rows = (
            self._connect()
            .execute(
                "SELECT c.request_key, c.sample_ix FROM unnest(%s::text[], %s::int[]) "
                "AS d(k, i) JOIN cache_claims c ON c.request_key = d.k AND c.sample_ix = d.i "
                f"WHERE c.expires >= {_NOW}",
                ([key for key, _ in items], [ix for _, ix in items]),
            )
            .fetchall()
        )
        return {(str(key), int(ix)) for key, ix in rows}

    def batch_records(self) -> BatchRecords:
        from evals.cache._batch_records_postgres import PostgresBatchRecords

        return PostgresBatchRecords(self._url)

    # ---- maintenance ----------------------------------------------------------------------

    @explained("read")
    def counts(self) -> StoredCounts:
        connection = self._connect()
        samples = connection.execute(
            "SELECT question, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) "
            "FROM cache_samples GROUP BY question, model"
        ).fetchall()
        errors = connection.execute(
            "SELECT question, model, COUNT(*) FROM cache_errors GROUP BY question, model"
        ).fetchall()
        claims = connection.execute("SELECT COUNT(*) FROM cache_claims").fetchone()
        size = connection.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c)), 0) FROM unnest(ARRAY["
            "'cache_samples', 'cache_errors', 'cache_meta', 'cache_claims'"
            "]::regclass[]) AS c"
        ).fetchone()
        return StoredCounts.of(
            samples, errors, int(claims[0]) if claims else 0, int(size[0]) if size else 0
        )

    @explained("clear")
    def clear(self, question: str | None, model: str | None) -> int:
        where, values = scope(question, model, "%s")
        connection = self._connect()
        with connection.transaction(), connection.cursor() as cursor:
            deleted = cursor.execute(f"DELETE FROM cache_samples{where}", values).rowcount
            cursor.execute(f"DELETE FROM cache_errors{where}", values)
        return int(deleted)

    # ---- copying --------------------------------------------------------------------------

    @explained("read")
    def export_rows(
        self, table: str, after: tuple[Any, ...] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        query = export_query(table, f"cache_{table}", after is not None, "%s")
        rows = self._connect().execute(query, (*(after or ()), limit)).fetchall()
        return [tuple(row) for row in rows]

    @explained("write to")
    def import_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        connection = self._connect()
        new = 0
        with connection.transaction(), connection.cursor() as cursor:
            if table == "errors":
                for row in rows:
                    cursor.execute(_INSERTS[table], {str(i): v for i, v in enumerate(row)})
                    new += cursor.rowcount
                return new
            cursor.executemany(_INSERTS[table], rows, returning=False)
            new = cursor.rowcount
        return max(0, new)


class _Rollback(Exception):
    """Leaves a transaction block by rolling it back."""


def _grouped(rows: Sequence[tuple[Any, ...]]) -> dict[str, CachedSamples]:
    """Rows of (key, sample_ix, …fields), ordered by key then index, as one `CachedSamples`
    per key."""
    found: dict[str, CachedSamples] = {}
    start = 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or rows[end][0] != rows[start][0]:
            found[rows[start][0]] = CachedSamples([row[1:] for row in rows[start:end]])
            start = end
    return found
