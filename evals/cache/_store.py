"""The response cache: one SQLite file (WAL) holding one row per (request key, sample index).

Each finished request is committed at once (WAL appends, no fsync per commit), so a crash
loses nothing already paid for; several processes may share the file. Failures go to a
separate `errors` table and are never returned as answers. See docs/design/cache.md.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from filelock import FileLock

from evals.cache._requests import ChatRequest, SampleResult
from evals.cache._samples import CachedLookup, CachedSamples
from evals.errors import CacheError, why_not_writable

if TYPE_CHECKING:
    from evals.cache._batch_records import BatchRecords
    from evals.cache._packs import Pack

__all__ = ["Cache", "CacheInfo", "CacheStats"]

P = ParamSpec("P")
R = TypeVar("R")

_SCHEMA_VERSION = 3  # 2: packs; 3: samples.reasoning_tokens (added in place)
_PACK_LIMIT_BYTES = 512 * 1024 * 1024
_PACK_WRITE_WAIT_MS = 200
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
CREATE TABLE IF NOT EXISTS packs (
    digest TEXT PRIMARY KEY,
    samples INTEGER NOT NULL,
    size INTEGER NOT NULL,
    created REAL NOT NULL,
    data BLOB NOT NULL
);
"""


@dataclass(frozen=True)
class CacheStats:
    """Cached samples and recorded errors for one (question, model)."""

    question: str
    model: str
    samples: int
    errors: int
    prompt_tokens: float
    completion_tokens: float


@dataclass(frozen=True)
class CacheInfo:
    """What `labmgr cache info` shows."""

    path: Path
    size_bytes: int
    samples: int
    errors: int
    entries: list[CacheStats] = field(default_factory=list)
    packs: int = 0
    pack_bytes: int = 0


def _add_reasoning_tokens(connection: sqlite3.Connection) -> None:
    """Upgrade a cache made before schema 3 in place: samples get a nullable
    `reasoning_tokens` column (its old rows say NULL: not recorded)."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(samples)")}
    if "reasoning_tokens" not in columns:
        connection.execute("ALTER TABLE samples ADD COLUMN reasoning_tokens REAL")


_SAMPLE_COLUMNS = (
    "content, logprobs, finish_reason, prompt_tokens, completion_tokens, reasoning_tokens"
)
"""The columns of a `SampleResult`, in its order."""


@contextmanager
def _briefly_waiting(connection: sqlite3.Connection) -> Iterator[None]:
    """Wait at most a moment for the write lock (for writes that are only worth a moment)."""
    connection.execute(f"PRAGMA busy_timeout={_PACK_WRITE_WAIT_MS}")
    try:
        yield
    finally:
        connection.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")


def _explained(
    action: str,
) -> Callable[[Callable[Concatenate[Cache, P], R]], Callable[Concatenate[Cache, P], R]]:
    """Turn an OS or SQLite error of a cache method into one `CacheError` naming the file."""

    def decorate(method: Callable[Concatenate[Cache, P], R]) -> Callable[Concatenate[Cache, P], R]:
        @functools.wraps(method)
        def wrapper(cache: Cache, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return method(cache, *args, **kwargs)
            except OSError as error:
                raise cache.os_error(action, error) from None
            except sqlite3.DatabaseError as error:
                raise cache.database_error(action, error) from None

        return wrapper

    return decorate


class Cache:
    """A request-level response cache in `directory` (created on first use).

    `pack_limit_bytes` caps the packed copies kept for fast reloads (oldest go first;
    0 keeps none)."""

    def __init__(self, directory: str | Path, *, pack_limit_bytes: int = _PACK_LIMIT_BYTES) -> None:
        self.directory = Path(directory)
        self.pack_limit_bytes = pack_limit_bytes
        self.path = self.directory / "responses.sqlite"
        self._local = threading.local()
        self._ready = False

    def __repr__(self) -> str:
        return f"Cache({str(self.directory)!r})"

    # ---- errors a person can cause ----------------------------------------------------------

    def os_error(self, action: str, error: OSError) -> CacheError:
        """The `CacheError` for an OS error met while doing `action` (a verb phrase)."""
        where = Path(error.filename) if error.filename else self.directory
        return CacheError(
            f"cannot {action} the response cache at {where}: {why_not_writable(where, error)}.",
            hint="Make the cache folder writable, or use another one "
            "(`cache=` in Python, `cache_dir` in the lab's config, `--dir` for `labmgr cache`).",
        )

    def database_error(self, action: str, error: sqlite3.DatabaseError) -> CacheError:
        """The `CacheError` for a SQLite error met while doing `action`."""
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

    @_explained("write to")
    def check_writable(self) -> None:
        """Raise `CacheError` now if answers could not be stored (called before buying)."""
        connection = self._connect()
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(
                "INSERT INTO meta VALUES ('write_check', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            )
        finally:
            connection.execute("ROLLBACK")

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
        return found is not None and int(found[0]) >= _SCHEMA_VERSION

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
                    (str(_SCHEMA_VERSION),),
                )
            finally:
                connection.close()
        self._ready = True

    @functools.cached_property
    def batches(self) -> BatchRecords:
        """The batches in flight for this cache's samples (tables in the same database)."""
        from evals.cache._batch_records import SqliteBatchRecords

        return SqliteBatchRecords(self.path)

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    # ---- reading --------------------------------------------------------------------------

    @_explained("read")
    def lookup(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        """Every cached sample of the given request keys: `{key: {sample_ix: result}}`.

        One primary-key range read per request (measured faster here than one `IN (…)` or
        `json_each` join per question, whose rows must each carry their key)."""
        found: dict[str, CachedSamples] = {}
        if not self.path.exists():
            return found
        cursor = self._connect().cursor()
        query = (
            f"SELECT sample_ix, {_SAMPLE_COLUMNS} FROM samples WHERE request_key = ? "
            "ORDER BY sample_ix"
        )
        for key in dict.fromkeys(keys):
            rows = cursor.execute(query, (key,)).fetchall()
            if rows:
                found[key] = CachedSamples(rows)
        return found

    @_explained("read")
    def lookup_first(self, wanted: Mapping[str, int]) -> dict[str, CachedSamples]:
        """For `{key: n}`, the cached samples among 0…n-1 (perhaps more when only some are).

        When all n are cached they are read without their indices (n rows below n are
        exactly those), which a fully cached reload of many samples is dominated by."""
        found: dict[str, CachedSamples] = {}
        if not self.path.exists():
            return found
        cursor = self._connect().cursor()
        first = (
            f"SELECT {_SAMPLE_COLUMNS} FROM samples WHERE request_key = ? AND sample_ix < ? "
            "ORDER BY sample_ix"
        )
        partial: list[str] = []
        for key, count in wanted.items():
            rows = cursor.execute(first, (key, count)).fetchall()
            if len(rows) == count:
                found[key] = CachedSamples(rows, numbered=False)
            elif rows:
                partial.append(key)
        found.update(self.lookup(partial))
        return found

    @_explained("read")
    def lookup_packed(self, chunks: Sequence[Mapping[str, int]]) -> CachedLookup:
        """`lookup_first` over several chunks of `{key: n}` (say one per model), with packs.

        A chunk of several samples found complete comes back as one `Pack` of columns and
        is stored as one row (see `evals.cache._packs`), so the next read of the same chunk is
        one statement and one decode instead of one statement per request and a row per
        sample."""
        from evals.cache._packs import Pack, chunk_digest  # pyarrow: imported by pandas anyway

        found = CachedLookup()
        if not self.path.exists():
            return found
        connection = self._connect()
        # Read before any sample: a `clear` after this point changes it and voids new packs.
        generation = self._generation(connection)
        fresh: list[tuple[str, Pack]] = []
        for chunk in chunks:
            if sum(chunk.values()) < 2:  # one sample: one row either way
                found.add_samples(self.lookup_first(chunk))
                continue
            digest = chunk_digest(chunk)
            stored = self._read_pack(connection, digest, chunk)
            if stored is not None:
                found.add_chunk(stored)
                continue
            read = self.lookup_first(chunk)
            if all(key in read and read[key].has_first(n) for key, n in chunk.items()):
                made = Pack.from_samples(chunk, read)
                found.add_chunk(made)
                fresh.append((digest, made))
            else:
                found.add_samples(read)
        if fresh and self.pack_limit_bytes > 0:
            self._write_packs(connection, generation, fresh)
        return found

    @staticmethod
    def _generation(connection: sqlite3.Connection) -> str | None:
        row = connection.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return None if row is None else str(row[0])

    @staticmethod
    def _read_pack(
        connection: sqlite3.Connection, digest: str, chunk: Mapping[str, int]
    ) -> Pack | None:
        from evals.cache._packs import Pack, UnreadablePack

        row = connection.execute("SELECT data FROM packs WHERE digest = ?", (digest,)).fetchone()
        if row is None:
            return None
        try:
            return Pack.from_blob(row[0], chunk)
        except UnreadablePack:
            with suppress(sqlite3.Error), _briefly_waiting(connection):
                connection.execute("DELETE FROM packs WHERE digest = ?", (digest,))
            return None

    def _write_packs(
        self,
        connection: sqlite3.Connection,
        generation: str | None,
        fresh: list[tuple[str, Pack]],
    ) -> None:
        """Store packs unless the cache was cleared since `generation` was read; a pack is
        an optional copy, so a busy or read-only cache just goes without."""
        rows = []
        for digest, made in fresh:
            blob = made.to_blob()
            if len(blob) <= self.pack_limit_bytes:
                samples = sum(made.counts.values())
                rows.append((digest, samples, len(blob), time.time(), blob, generation))
        if not rows:
            return
        # Busy, read-only or full: the samples are all there, only the copy is not.
        with suppress(sqlite3.Error), _briefly_waiting(connection):
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.executemany(
                    "INSERT OR REPLACE INTO packs SELECT ?, ?, ?, ?, ? WHERE "
                    "(SELECT value FROM meta WHERE key = 'generation') IS ?",
                    rows,
                )
                self._evict_packs(connection)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def _evict_packs(self, connection: sqlite3.Connection) -> None:
        """Drop the oldest packs until the rest fit in `pack_limit_bytes`."""
        total = connection.execute("SELECT COALESCE(SUM(size), 0) FROM packs").fetchone()[0]
        if total <= self.pack_limit_bytes:
            return
        doomed = []
        for digest, size in connection.execute(
            "SELECT digest, size FROM packs ORDER BY created"
        ).fetchall():
            if total <= self.pack_limit_bytes:
                break
            doomed.append((digest,))
            total -= size
        connection.executemany("DELETE FROM packs WHERE digest = ?", doomed)

    # ---- writing --------------------------------------------------------------------------

    def store(
        self,
        request: ChatRequest,
        question: str,
        samples: Sequence[tuple[int, SampleResult]],
    ) -> None:
        """Persist finished samples; an existing (key, index) keeps its first answer."""
        self.store_samples(request.cache_key, request.model, question, samples)

    @_explained("write to")
    def store_samples(
        self,
        key: str,
        model: str,
        question: str,
        samples: Sequence[tuple[int, SampleResult]],
    ) -> None:
        """`store` by request key (a batch's answers are read back without the request)."""
        now = time.time()
        rows = [
            (
                key,
                ix,
                model,
                question,
                s.content,
                s.logprobs_json,
                s.finish_reason,
                s.prompt_tokens,
                s.completion_tokens,
                now,
                s.reasoning_tokens,
            )
            for ix, s in samples
        ]
        connection = self._connect()
        insert = (
            "INSERT OR IGNORE INTO samples (request_key, sample_ix, model, question, content, "
            "logprobs, finish_reason, prompt_tokens, completion_tokens, created, "
            "reasoning_tokens) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
        )
        if len(rows) == 1:
            connection.execute(insert, rows[0])  # autocommit: one statement, one transaction
        else:
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.executemany(insert, rows)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        if self._errors_possible(connection):
            marks = ",".join("?" * len(samples))
            connection.execute(
                f"DELETE FROM errors WHERE request_key = ? AND sample_ix IN ({marks})",
                (key, *(ix for ix, _ in samples)),
            )

    def _errors_possible(self, connection: sqlite3.Connection) -> bool:
        """Whether the errors table had rows when this thread first looked (or got some)."""
        known: bool | None = getattr(self._local, "errors_possible", None)
        if known is None:
            known = connection.execute("SELECT EXISTS (SELECT 1 FROM errors)").fetchone()[0] == 1
            self._local.errors_possible = known
        return known

    def record_error(
        self,
        request: ChatRequest,
        question: str,
        sample_ixs: Sequence[int],
        *,
        kind: str,
        message: str,
    ) -> None:
        """Log a failure for these samples; they stay missing and are retried next run."""
        self.record_errors(
            request.cache_key, request.model, question, sample_ixs, kind=kind, message=message
        )

    @_explained("write to")
    def record_errors(
        self,
        key: str,
        model: str,
        question: str,
        sample_ixs: Sequence[int],
        *,
        kind: str,
        message: str,
    ) -> None:
        """`record_error` by request key."""
        now = time.time()
        rows = [(key, ix, model, question, kind, message, now) for ix in sample_ixs]
        self._connect().executemany("INSERT INTO errors VALUES (?,?,?,?,?,?,?)", rows)
        self._local.errors_possible = True

    # ---- maintenance ----------------------------------------------------------------------

    @_explained("read")
    def info(self) -> CacheInfo:
        """Sizes and per-(question, model) counts."""
        if not self.path.exists():
            return CacheInfo(self.path, 0, 0, 0, [])
        connection = self._connect()
        stats: dict[tuple[str, str], list[float]] = {}
        for question, model, count, prompt, completion in connection.execute(
            "SELECT question, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) "
            "FROM samples GROUP BY question, model"
        ):
            stats[(question, model)] = [count, 0, prompt, completion]
        for question, model, count in connection.execute(
            "SELECT question, model, COUNT(*) FROM errors GROUP BY question, model"
        ):
            stats.setdefault((question, model), [0, 0, 0.0, 0.0])[1] = count
        entries = [
            CacheStats(q, m, int(v[0]), int(v[1]), float(v[2]), float(v[3]))
            for (q, m), v in sorted(stats.items())
        ]
        packs, pack_bytes = connection.execute(
            "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM packs"
        ).fetchone()
        size = sum(
            p.stat().st_size for p in self.directory.glob("responses.sqlite*") if p.is_file()
        )
        return CacheInfo(
            self.path,
            size,
            sum(e.samples for e in entries),
            sum(e.errors for e in entries),
            entries,
            int(packs),
            int(pack_bytes),
        )

    @_explained("write to")
    def drop_packs(self) -> int:
        """Delete every pack (the samples stay; reloads pack them again). Returns how many."""
        if not self.path.exists():
            return 0
        connection = self._connect()
        return int(connection.execute("DELETE FROM packs").rowcount)

    @_explained("clear")
    def clear(self, *, question: str | None = None, model: str | None = None) -> int:
        """Delete cached samples (and errors), all or those of a question and/or model.

        A question's judge verdicts (labelled `<question>/judges`) go with it, and every
        pack (packs are copies; the next reads make new ones). Returns the number of samples
        deleted.
        """
        if not self.path.exists():
            return 0
        conditions, values = [], []
        if question is not None:
            conditions.append("(question = ? OR question = ?)")
            values.extend([question, f"{question}/judges"])
        if model is not None:
            conditions.append("model = ?")
            values.append(model)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        connection = self._connect()
        with FileLock(str(self.path) + ".lock"):
            connection.execute("BEGIN IMMEDIATE")
            deleted = connection.execute(f"DELETE FROM samples{where}", values).rowcount
            connection.execute(f"DELETE FROM errors{where}", values)
            connection.execute("DELETE FROM packs")
            # A reader that read samples before this commit must not store a pack after it.
            connection.execute(
                "INSERT INTO meta VALUES ('generation', '1') ON CONFLICT (key) "
                "DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )
            connection.execute("COMMIT")
        if not conditions:
            connection.execute("VACUUM")
        return int(deleted)
