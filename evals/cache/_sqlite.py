"""The cache in one SQLite file (WAL, one connection per thread), shared by a machine's
processes through SQLite's locking; claims use the machine's clock."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock

from evals.cache._backend import CacheBackend, Item, explained
from evals.cache._samples import CachedSamples
from evals.cache._schema import SAMPLE_FIELDS
from evals.errors import CacheError, why_not_writable

_BUSY_TIMEOUT_MS = 60_000
_BULK_SINGLES = 16
"""From this many one-sample requests in a read, they are read in one statement."""


class SqliteBackend(CacheBackend):
    """The cache in `path` (created with its folder on first write)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.directory = path.parent
        self.location = str(path)

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

    def _open(self) -> sqlite3.Connection:
        if not self._ready:
            self.directory.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        return connection

    @contextmanager
    def transaction(self, connection: Any) -> Iterator[Any]:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    @contextmanager
    def schema_lock(self, connection: Any) -> Iterator[Any]:
        with FileLock(str(self.path) + ".lock"), self.transaction(connection):
            yield connection

    def now(self) -> float:
        return time.time()

    def exists(self) -> bool:
        return self._ready or self.path.exists()

    def _size_bytes(self, connection: Any) -> int:
        return sum(
            p.stat().st_size
            for p in self.directory.glob(self.path.name + "*")
            if p.is_file() and not p.name.endswith(".lock")
        )

    @explained("read")
    def read_all(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        """One primary-key range read per request (measured faster than one join per chunk)."""
        found: dict[str, CachedSamples] = {}
        cursor = self.connect().cursor()
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
        """All n cached are read without their indices (n rows below n are exactly those);
        one-sample requests (judge verdicts) in one statement, half the cost of one each."""
        found: dict[str, CachedSamples] = {}
        cursor = self.connect().cursor()
        singles = [key for key, count in wanted.items() if count == 1]
        if len(singles) >= _BULK_SINGLES:
            rows = cursor.execute(
                f"SELECT request_key, {SAMPLE_FIELDS} FROM samples WHERE sample_ix = 0 "
                "AND request_key IN (SELECT value FROM json_each(?))",
                (json.dumps(singles),),
            )
            for row in rows:
                found[row[0]] = CachedSamples((row[1:],), numbered=False)
            wanted = {key: count for key, count in wanted.items() if count != 1}
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

    def _errors_possible(self, connection: Any) -> bool:
        known: bool | None = getattr(self._local, "errors_possible", None)
        if known is None:
            known = connection.execute("SELECT EXISTS (SELECT 1 FROM errors)").fetchone()[0] == 1
            self._local.errors_possible = known
        return known

    @explained("write to")
    def claim(self, owner: str, items: Sequence[Item], lease_seconds: float) -> set[Item]:
        connection = self.connect()
        now = time.time()
        with self.transaction(connection):
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

    @explained("read")
    def held(self, items: Sequence[Item]) -> set[Item]:
        cursor = self.connect().cursor()
        now = time.time()
        query = "SELECT 1 FROM claims WHERE request_key = ? AND sample_ix = ? AND expires >= ?"
        return {item for item in items if cursor.execute(query, (*item, now)).fetchone()}

    @explained("clear")
    def clear(self, question: str | None, model: str | None) -> int:
        deleted = super().clear(question, model)
        if question is None and model is None:
            self.connect().execute("VACUUM")
        return deleted
