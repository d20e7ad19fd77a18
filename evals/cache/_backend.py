"""The statements every database runs alike, written once with `?` placeholders and `{p}`
before each table name; `_sqlite` and `_postgres` add connections, transactions, clock, error
messages, bulk reads and claims. Rows are tuples in `_schema`'s column order."""

from __future__ import annotations

import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from evals.cache._samples import CachedSamples
from evals.cache._schema import COPIED_TABLES, INSERTS, SCHEMA, SCHEMA_VERSION
from evals.errors import CacheError

F = TypeVar("F", bound=Callable[..., Any])
Item = tuple[str, int]
"""(request key, sample index)."""


@dataclass(frozen=True)
class CacheStats:
    """Cached samples and recorded errors for one (question, model)."""

    question: str
    model: str
    samples: int
    errors: int
    prompt_tokens: float
    completion_tokens: float


def explained(action: str) -> Callable[[F], F]:
    """Turn a driver error of a backend method into the backend's `CacheError`."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(backend: CacheBackend, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(backend, *args, **kwargs)
            except backend.driver_errors() as error:
                raise backend.explain(action, error) from None

        return cast(F, wrapper)

    return decorate


class _Rollback(Exception):
    """Leaves a transaction block by rolling it back."""


class CacheBackend(ABC):
    """One database holding the cache's tables."""

    location: str
    """A file path, or a URL with its password masked."""
    prefix = ""
    placeholder = "?"

    def __init__(self) -> None:
        self._local = threading.local()
        self._ready = False
        self._lock = threading.Lock()

    @abstractmethod
    def driver_errors(self) -> tuple[type[Exception], ...]:
        """The errors `explain` turns into a `CacheError`."""

    @abstractmethod
    def explain(self, action: str, error: Exception) -> CacheError:
        """The `CacheError` for a driver error met doing `action` (a verb phrase)."""

    @abstractmethod
    def _open(self) -> Any:
        """A new DB-API connection in autocommit mode."""

    @abstractmethod
    def transaction(self, connection: Any) -> AbstractContextManager[Any]:
        """A transaction that takes the write lock at once."""

    @abstractmethod
    def schema_lock(self, connection: Any) -> AbstractContextManager[Any]:
        """A transaction no other process makes tables in at the same time."""

    @abstractmethod
    def now(self) -> float:
        """The clock leases are kept by (the server's, where there is one)."""

    @abstractmethod
    def read_all(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        """Every cached sample of these requests, numbered."""

    @abstractmethod
    def read_first(self, wanted: Mapping[str, int]) -> dict[str, CachedSamples]:
        """For `{key: n}`, the cached samples among 0…n-1 (perhaps more when only some are)."""

    @abstractmethod
    def claim(self, owner: str, items: Sequence[Item], lease_seconds: float) -> set[Item]:
        """Claim for `lease_seconds` the items nobody holds (or whose claim expired), atomically
        per item; returns those `owner` holds now."""

    @abstractmethod
    def held(self, items: Sequence[Item]) -> set[Item]:
        """The items someone holds a live claim on."""

    @abstractmethod
    def _size_bytes(self, connection: Any) -> int: ...

    def exists(self) -> bool:
        """Whether there may be anything to read."""
        return True

    def sql(self, statement: str) -> str:
        statement = statement.replace("{p}", self.prefix)
        return statement if self.placeholder == "?" else statement.replace("?", self.placeholder)

    def connect(self) -> Any:
        """This thread's connection (the tables made or brought up to date on first use)."""
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._open()
            if not self._ready:
                with self._lock:
                    if not self._ready:
                        self._make_tables(connection)
                        self._ready = True
            self._local.connection = connection
        return connection

    def _version(self, connection: Any) -> int:
        try:
            found = connection.execute(
                self.sql("SELECT value FROM {p}meta WHERE key = 'schema_version'")
            ).fetchone()
        except self.driver_errors():  # no meta table yet
            return 0
        return 0 if found is None else int(found[0])

    def _make_tables(self, connection: Any) -> None:
        """The tables, unless the version row (written last) says they are current, so that
        opening an existing cache takes no lock."""
        if self._version(connection) >= SCHEMA_VERSION:
            return
        with self.schema_lock(connection):
            self.run_script(connection, SCHEMA)
            columns = connection.execute(self.sql("SELECT * FROM {p}samples LIMIT 0")).description
            if "reasoning_tokens" not in {column[0] for column in columns}:  # before schema 3
                connection.execute(
                    self.sql("ALTER TABLE {p}samples ADD COLUMN reasoning_tokens DOUBLE PRECISION")
                )
            connection.execute(
                self.sql(
                    "INSERT INTO {p}meta VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE "
                    "SET value = excluded.value WHERE CAST({p}meta.value AS INTEGER) < ?"
                ),
                (str(SCHEMA_VERSION), SCHEMA_VERSION),
            )

    def run_script(self, connection: Any, script: str) -> None:
        for statement in filter(str.strip, self.sql(script).split(";")):
            connection.execute(statement)

    def close(self) -> None:
        """Close this thread's connection."""
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            with suppress(Exception):
                connection.close()

    @explained("write to")
    def check_writable(self) -> None:
        """Raise `CacheError` now if answers could not be stored."""
        connection = self.connect()
        with suppress(_Rollback), self.transaction(connection):
            connection.execute(
                self.sql(
                    "INSERT INTO {p}meta VALUES ('write_check', '1') "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                )
            )
            raise _Rollback

    def _errors_possible(self, connection: Any) -> bool:
        return True

    @explained("write to")
    def insert_samples(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Store sample rows (an existing (key, index) keeps its first answer) and forget
        their errors, in one transaction. Their claims stay until the buyer finishes."""
        connection = self.connect()
        insert = self.sql(INSERTS["samples"])
        errors = self._errors_possible(connection)
        if len(rows) == 1 and not errors:
            connection.execute(insert, rows[0])  # autocommit: one statement, one transaction
            return
        with self.transaction(connection):
            cursor = connection.cursor()
            cursor.executemany(insert, rows)
            if errors:
                cursor.executemany(
                    self.sql("DELETE FROM {p}errors WHERE request_key = ? AND sample_ix = ?"),
                    [(row[0], row[1]) for row in rows],
                )

    @explained("write to")
    def insert_errors(self, rows: Sequence[tuple[Any, ...]], owner: str | None) -> None:
        """Record failures and release `owner`'s claims on those samples."""
        connection = self.connect()
        with self.transaction(connection):
            cursor = connection.cursor()
            cursor.executemany(self.sql("INSERT INTO {p}errors VALUES (?, ?, ?, ?, ?, ?, ?)"), rows)
            if owner is not None:
                self._release(cursor, owner, [(row[0], row[1]) for row in rows])
        self._local.errors_possible = True

    @explained("write to")
    def renew(self, owner: str, lease_seconds: float) -> int:
        """Extend every claim `owner` holds (the heartbeat); returns how many."""
        cursor = self.connect().execute(
            self.sql("UPDATE {p}claims SET expires = ? WHERE owner = ?"),
            (self.now() + lease_seconds, owner),
        )
        return int(cursor.rowcount)

    @explained("write to")
    def release(self, owner: str, items: Sequence[Item] | None = None) -> None:
        """Give up `owner`'s claims on these items (all of them with None)."""
        connection = self.connect()
        if items is None:
            connection.execute(self.sql("DELETE FROM {p}claims WHERE owner = ?"), (owner,))
            return
        with self.transaction(connection):
            self._release(connection.cursor(), owner, items)

    def _release(self, cursor: Any, owner: str, items: Sequence[Item]) -> None:
        cursor.executemany(
            self.sql("DELETE FROM {p}claims WHERE request_key = ? AND sample_ix = ? AND owner = ?"),
            [(key, ix, owner) for key, ix in items],
        )

    @explained("read")
    def counts(self) -> tuple[list[CacheStats], int, int]:
        """Per-(question, model) counts, claims, bytes."""
        connection = self.connect()
        stats: dict[tuple[str, str], list[float]] = {}
        for question, model, count, prompt, completion in connection.execute(
            self.sql(
                "SELECT question, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) "
                "FROM {p}samples GROUP BY question, model"
            )
        ).fetchall():
            stats[(question, model)] = [count, 0, prompt, completion]
        for question, model, count in connection.execute(
            self.sql("SELECT question, model, COUNT(*) FROM {p}errors GROUP BY question, model")
        ).fetchall():
            stats.setdefault((question, model), [0, 0, 0.0, 0.0])[1] = count
        entries = [
            CacheStats(q, m, int(v[0]), int(v[1]), float(v[2]), float(v[3]))
            for (q, m), v in sorted(stats.items())
        ]
        claims = connection.execute(self.sql("SELECT COUNT(*) FROM {p}claims")).fetchone()[0]
        return entries, int(claims), self._size_bytes(connection)

    @explained("clear")
    def clear(self, question: str | None, model: str | None) -> int:
        conditions, values = [], []
        if question is not None:
            conditions.append("(question = ? OR question = ?)")
            values.extend([question, f"{question}/judges"])
        if model is not None:
            conditions.append("model = ?")
            values.append(model)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        connection = self.connect()
        with self.schema_lock(connection):
            cursor = connection.cursor()
            cursor.execute(self.sql(f"DELETE FROM {{p}}samples{where}"), values)
            deleted = cursor.rowcount
            cursor.execute(self.sql(f"DELETE FROM {{p}}errors{where}"), values)
        return int(deleted)

    @explained("read")
    def export_rows(
        self, table: str, after: tuple[Any, ...] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` rows of `samples` or `errors` after the key `after`, in key order."""
        columns, keys = COPIED_TABLES[table]
        order = ", ".join(keys)
        where = f" WHERE ({order}) > ({', '.join('?' * len(keys))})" if after else ""
        query = f"SELECT {', '.join(columns)} FROM {{p}}{table}{where} ORDER BY {order} LIMIT ?"
        rows = self.connect().execute(self.sql(query), (*(after or ()), limit)).fetchall()
        return [tuple(row) for row in rows]

    @explained("write to")
    def import_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        """Insert rows exported from another cache, skipping those here; returns how many
        were new."""
        if table == "errors":
            rows = [(*row, row[0], row[1], row[6], row[5]) for row in rows]
        connection = self.connect()
        with self.transaction(connection):
            cursor = connection.cursor()
            cursor.executemany(self.sql(INSERTS[table]), rows)
            return max(0, int(cursor.rowcount))
