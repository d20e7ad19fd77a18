"""The response cache: one SQLite file (WAL) holding one row per (request key, sample index).

Each finished request is committed at once (WAL appends, no fsync per commit), so a crash
loses nothing already paid for; several processes may share the file. Failures go to a
separate `errors` table and are never returned as answers. See docs/design/cache.md.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from evals.requests import ChatRequest, SampleResult

__all__ = ["Cache", "CacheInfo", "CacheStats", "CachedSamples"]

_SCHEMA_VERSION = 1
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


class CachedSamples(Mapping[int, SampleResult]):
    """One request's cached samples, held as columns (one tuple per field, by sample index).

    A mapping `{sample_ix: SampleResult}` for general use; bulk readers take the columns
    directly (`has_first(n)` says whether samples 0…n-1 are the first n entries), so a reload
    builds no per-sample objects.
    """

    __slots__ = (
        "_positions",
        "completion_tokens",
        "content",
        "finish_reason",
        "logprobs_json",
        "prompt_tokens",
        "sample_ix",
    )

    def __init__(self, rows: Sequence[Sequence[Any]], *, numbered: bool = True) -> None:
        """`rows`: (sample_ix, *SampleResult fields), ordered by sample index, no repeats;
        without `numbered`, just the SampleResult fields of samples 0…len(rows)-1."""
        self.sample_ix: Sequence[int]
        self.content: Sequence[str | None]
        self.logprobs_json: Sequence[str | None]
        self.finish_reason: Sequence[str | None]
        self.prompt_tokens: Sequence[float]
        self.completion_tokens: Sequence[float]
        if not numbered:
            self.sample_ix = range(len(rows))
            (
                self.content,
                self.logprobs_json,
                self.finish_reason,
                self.prompt_tokens,
                self.completion_tokens,
            ) = zip(*rows, strict=True) if rows else ((),) * 5
        else:
            (
                self.sample_ix,
                self.content,
                self.logprobs_json,
                self.finish_reason,
                self.prompt_tokens,
                self.completion_tokens,
            ) = zip(*rows, strict=True) if rows else ((),) * 6
        self._positions: dict[int, int] | None = None

    def has_first(self, count: int) -> bool:
        """Whether samples 0…count-1 are all cached (they are then the first `count` columns).

        Indices are unique, non-negative and sorted, so the one at position count-1 is at
        least count-1, and equal only when every earlier one is in place."""
        return count == 0 or (
            len(self.sample_ix) >= count and self.sample_ix[count - 1] == count - 1
        )

    def missing(self, count: int) -> list[int]:
        """Which of samples 0…count-1 are not cached."""
        if self.has_first(count):
            return []
        return [ix for ix in range(count) if ix not in self]

    def _position(self, ix: object) -> int | None:
        if self._positions is None:
            self._positions = {s: position for position, s in enumerate(self.sample_ix)}
        return self._positions.get(ix)  # type: ignore[call-overload]

    def __getitem__(self, ix: int) -> SampleResult:
        position = self._position(ix)
        if position is None:
            raise KeyError(ix)
        return SampleResult(
            self.content[position],
            self.logprobs_json[position],
            self.finish_reason[position],
            self.prompt_tokens[position],
            self.completion_tokens[position],
        )

    def __contains__(self, ix: object) -> bool:
        return self._position(ix) is not None

    def __iter__(self) -> Iterator[int]:
        return iter(self.sample_ix)

    def __len__(self) -> int:
        return len(self.sample_ix)

    def __repr__(self) -> str:
        return f"CachedSamples({dict(self.items())!r})"


class Cache:
    """A request-level response cache in `directory` (created on first use)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / "responses.sqlite"
        self._local = threading.local()
        self._ready = False

    def __repr__(self) -> str:
        return f"Cache({str(self.directory)!r})"

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
        connection.execute("PRAGMA busy_timeout=60000")
        if not self._ready:
            if self._has_schema(connection):
                self._ready = True
            else:
                self._initialise()
        self._local.connection = connection
        return connection

    @staticmethod
    def _has_schema(connection: sqlite3.Connection) -> bool:
        """Whether the schema is complete (its version row is written after every table), so
        that opening an existing cache skips the file lock and the schema script."""
        try:
            found = connection.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError:  # no meta table yet
            return False
        return found is not None

    def _initialise(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.executescript(_SCHEMA)
                connection.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                    (str(_SCHEMA_VERSION),),
                )
            finally:
                connection.close()
        self._ready = True

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    # ---- reading --------------------------------------------------------------------------

    def lookup(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        """Every cached sample of the given request keys: `{key: {sample_ix: result}}`.

        One primary-key range read per request (measured faster here than one `IN (…)` or
        `json_each` join per question, whose rows must each carry their key)."""
        found: dict[str, CachedSamples] = {}
        if not self.path.exists():
            return found
        cursor = self._connect().cursor()
        query = (
            "SELECT sample_ix, content, logprobs, finish_reason, prompt_tokens, "
            "completion_tokens FROM samples WHERE request_key = ? ORDER BY sample_ix"
        )
        for key in dict.fromkeys(keys):
            rows = cursor.execute(query, (key,)).fetchall()
            if rows:
                found[key] = CachedSamples(rows)
        return found

    def lookup_first(self, wanted: Mapping[str, int]) -> dict[str, CachedSamples]:
        """For `{key: n}`, the cached samples among 0…n-1 (perhaps more when only some are).

        When all n are cached they are read without their indices (n rows below n are
        exactly those), which a fully cached reload of many samples is dominated by."""
        found: dict[str, CachedSamples] = {}
        if not self.path.exists():
            return found
        cursor = self._connect().cursor()
        first = (
            "SELECT content, logprobs, finish_reason, prompt_tokens, completion_tokens "
            "FROM samples WHERE request_key = ? AND sample_ix < ? ORDER BY sample_ix"
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

    # ---- writing --------------------------------------------------------------------------

    def store(
        self,
        request: ChatRequest,
        question: str,
        samples: Sequence[tuple[int, SampleResult]],
    ) -> None:
        """Persist finished samples; an existing (key, index) keeps its first answer."""
        now = time.time()
        key, model = request.cache_key, request.model
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
            )
            for ix, s in samples
        ]
        connection = self._connect()
        insert = "INSERT OR IGNORE INTO samples VALUES (?,?,?,?,?,?,?,?,?,?)"
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
        now = time.time()
        rows = [
            (request.cache_key, ix, request.model, question, kind, message, now)
            for ix in sample_ixs
        ]
        self._connect().executemany("INSERT INTO errors VALUES (?,?,?,?,?,?,?)", rows)
        self._local.errors_possible = True

    # ---- maintenance ----------------------------------------------------------------------

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
        size = sum(
            p.stat().st_size for p in self.directory.glob("responses.sqlite*") if p.is_file()
        )
        return CacheInfo(
            self.path,
            size,
            sum(e.samples for e in entries),
            sum(e.errors for e in entries),
            entries,
        )

    def clear(self, *, question: str | None = None, model: str | None = None) -> int:
        """Delete cached samples (and errors), all or those of a question and/or model.

        A question's judge verdicts (labelled `<question>/judges`) go with it.
        Returns the number of samples deleted.
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
            connection.execute("COMMIT")
        if not conditions:
            connection.execute("VACUUM")
        return int(deleted)
