"""The response cache: one row per (request key, sample index), in a SQLite file or a
PostgreSQL database a lab shares; the SQL is in the backends. See docs/design/cache.md."""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from evals.cache._backend import CacheBackend, CacheStats, Item
from evals.cache._batch_records import BatchRecords
from evals.cache._requests import ChatRequest, SampleResult
from evals.cache._samples import CachedLookup, CachedSamples
from evals.cache._schema import COPIED_TABLES
from evals.errors import CacheError

SQLITE_FILE_NAME = "responses.sqlite"
DEFAULT_LEASE_SECONDS = 30.0
"""How long a claim outlives its last heartbeat."""


@dataclass(frozen=True)
class CacheInfo:
    """What `labmgr cache info` shows."""

    path: Path | None
    """The SQLite file (None for a cache in PostgreSQL)."""
    size_bytes: int
    samples: int
    errors: int
    entries: list[CacheStats] = field(default_factory=list)
    url: str = ""
    """The cache's SQLAlchemy URL, any password masked."""
    claims: int = 0
    """Samples claimed by runs buying them now (or that died, until their lease ends)."""


def _open_backend(location: str | Path) -> CacheBackend:
    from evals.cache._sqlite import SqliteBackend

    text = str(location)
    if "://" not in text:
        return SqliteBackend(Path(location) / SQLITE_FILE_NAME)
    from sqlalchemy.engine import make_url

    scheme = text.split("://", 1)[0].split("+", 1)[0].lower()
    if scheme == "sqlite":
        database = make_url(text).database
        if not database or database == ":memory:":
            raise CacheError(
                f"the cache URL {text!r} names no file.",
                hint="Use sqlite:////absolute/path/responses.sqlite, or a folder.",
            )
        return SqliteBackend(Path(database).expanduser())
    if scheme in ("postgresql", "postgres"):
        from evals.cache._postgres import PostgresBackend

        return PostgresBackend(text)
    shown = make_url(text).render_as_string(hide_password=True) if scheme else text
    raise CacheError(
        f"the response cache cannot live at {shown}: only SQLite and PostgreSQL are supported.",
        hint="Use a folder, sqlite:////path/responses.sqlite or postgresql+psycopg://user@host/db.",
    )


class Cache:
    """A request-level response cache: a folder (its SQLite file, created on first use) or a
    SQLAlchemy URL (`sqlite:///…` or `postgresql+psycopg://…`); `lease_seconds` is how long
    a claim outlives its owner's last heartbeat."""

    def __init__(
        self, location: str | Path, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> None:
        self._backend = _open_backend(location)
        self.lease_seconds = lease_seconds
        path = getattr(self._backend, "path", None)
        self.path: Path | None = path
        """The SQLite file (None in PostgreSQL)."""
        self.directory: Path | None = path.parent if path is not None else None
        self.location = self._backend.location
        """The SQLite file, or the URL (password masked)."""
        self.url = f"sqlite:///{path.expanduser().resolve().as_posix()}" if path else self.location

    def __repr__(self) -> str:
        return f"Cache({self.location!r})"

    def check_writable(self) -> None:
        """Raise `CacheError` now if answers could not be stored (called before buying)."""
        self._backend.check_writable()

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        self._backend.close()

    def lookup(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        """Every cached sample of the given request keys: `{key: {sample_ix: result}}`."""
        if not self._backend.exists():
            return {}
        return self._backend.read_all(keys)

    def lookup_chunks(self, chunks: Sequence[Mapping[str, int]]) -> CachedLookup:
        """For each chunk `{key: n}` (a model's requests for a question), the cached samples
        among 0…n-1 (perhaps more when only some are): one bulk read per chunk."""
        found = CachedLookup()
        if self._backend.exists():
            for chunk in chunks:
                found.update(self._backend.read_first(chunk))
        return found

    def landed(self, items: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
        """Those of these (request key, sample index) the cache holds."""
        wanted = list(items)
        found = self.lookup({key for key, _ in wanted})
        return {(key, ix) for key, ix in wanted if key in found and ix in found[key]}

    def store(
        self, request: ChatRequest, question: str, samples: Sequence[tuple[int, SampleResult]]
    ) -> None:
        """Persist finished samples; an existing (key, index) keeps its first answer."""
        self.store_many([(request.cache_key, request.model, question, samples)])

    def store_many(
        self, answers: Sequence[tuple[str, str, str, Sequence[tuple[int, SampleResult]]]]
    ) -> None:
        """`store` for several requests' (request key, model, question, samples), in one
        transaction."""
        now = time.time()
        rows = [
            (key, ix, model, question, *sample[:5], now, sample.reasoning_tokens)
            for key, model, question, samples in answers
            for ix, sample in samples
        ]
        if rows:
            self._backend.insert_samples(rows)

    def record_errors(
        self,
        key: str,
        model: str,
        question: str,
        sample_ixs: Sequence[int],
        *,
        message: str,
        owner: str | None = None,
    ) -> None:
        """Log a failure for these samples of the request `key` (they stay missing; `owner`'s
        claims on them are released)."""
        now = time.time()
        rows = [(key, ix, model, question, "error", message, now) for ix in sample_ixs]
        self._backend.insert_errors(rows, owner)

    @functools.cached_property
    def batches(self) -> BatchRecords:
        """The batches in flight for this cache's samples (tables in the same database)."""
        return BatchRecords(self._backend)

    def claimed(self, items: Sequence[tuple[str, int]]) -> set[tuple[str, int]]:
        """Those of these (request key, sample index) with a live claim of any owner."""
        if not items or not self._backend.exists():
            return set()
        return self._backend.held(items)

    def claims(self, *, heartbeat_seconds: float | None = None) -> Claims:
        """A new claimant (a context manager: its heartbeat runs inside, and what it still
        holds is released on the way out)."""
        return Claims(self._backend, self.lease_seconds, heartbeat_seconds=heartbeat_seconds)

    def info(self) -> CacheInfo:
        """Sizes and per-(question, model) counts."""
        if not self._backend.exists():
            return CacheInfo(self.path, 0, 0, 0, [], url=self.url)
        entries, claims, size = self._backend.counts()
        return CacheInfo(
            self.path,
            size,
            sum(e.samples for e in entries),
            sum(e.errors for e in entries),
            entries,
            url=self.url,
            claims=claims,
        )

    def clear(self, *, question: str | None = None, model: str | None = None) -> int:
        """Delete cached samples and errors: all, or a question's (its `<question>/judges`
        too) and/or a model's; returns how many samples."""
        if not self._backend.exists():
            return 0
        return self._backend.clear(question, model)

    def copy_to(
        self,
        target: Cache | str | Path,
        *,
        batch_rows: int = 2000,
        progress: Callable[[str, int], None] | None = None,
    ) -> CopyResult:
        """Copy every sample, error and batch in flight into `target` (a `Cache`, folder or
        URL), `batch_rows` per transaction, `progress(table, rows read)` after each; what the
        target holds is skipped, so an interrupted copy resumes."""
        destination = target if isinstance(target, Cache) else Cache(target)
        return _copy(self._backend, destination._backend, batch_rows, progress)


class Claims:
    """One claimant (a run of one process): a heartbeat renews its claims while it is entered
    as a context manager; on the way out what it still holds is released (not bought)."""

    def __init__(
        self,
        backend: CacheBackend,
        lease_seconds: float,
        *,
        heartbeat_seconds: float | None = None,
    ) -> None:
        self._backend = backend
        self.lease_seconds = lease_seconds
        self.heartbeat_seconds = heartbeat_seconds or max(0.05, lease_seconds / 3)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(self, items: Sequence[Item]) -> set[Item]:
        """Claim what nobody else holds (or whose claim expired); returns what is ours."""
        return self._backend.claim(self.owner, items, self.lease_seconds) if items else set()

    def release(self, items: Sequence[Item] | None = None) -> None:
        """Give up these claims (all of them with None)."""
        self._backend.release(self.owner, items)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.heartbeat_seconds):
                with suppress(CacheError):  # the next beat tries again
                    self._backend.renew(self.owner, self.lease_seconds)
        finally:
            self._backend.close()

    def __enter__(self) -> Claims:
        self._thread = threading.Thread(target=self._beat, name="cache-claims", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with suppress(CacheError):
            try:
                self.release()
            except CacheError:  # a dropped connection is closed by then: this connects anew
                self.release()


_COUNTED = (*COPIED_TABLES, "batches")


@dataclass
class CopyResult:
    """Rows read from the source and rows the target did not hold yet, per table."""

    read: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTED, 0))
    copied: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTED, 0))
    source: str = ""
    target: str = ""


def _copy(
    source: CacheBackend,
    target: CacheBackend,
    batch_rows: int,
    progress: Callable[[str, int], None] | None,
) -> CopyResult:
    """`Cache.copy_to`: samples and errors in key order, then the batches in flight (each with
    its samples and what is left of its lease); claims stay with the source's runs."""
    result = CopyResult(source=source.location, target=target.location)
    if not source.exists():
        return result
    target.check_writable()
    for table, (names, keys) in COPIED_TABLES.items():
        after = None
        columns = [names.index(key) for key in keys]
        while True:
            rows = source.export_rows(table, after, batch_rows)
            if not rows:
                break
            result.copied[table] += target.import_rows(table, rows)
            result.read[table] += len(rows)
            after = tuple(rows[-1][i] for i in columns)
            if progress is not None:
                progress(table, result.read[table])
            if len(rows) < batch_rows:
                break
    records = BatchRecords(source)
    try:
        live = records.records(active_only=True, limit=1_000_000)
    except CacheError:  # a read-only source without batch tables has no batches
        return result
    into = BatchRecords(target)
    for record in reversed(live):  # oldest first
        result.read["batches"] += 1
        if into.get(record.id) is None:
            lines = records.lines(record.id)
            lease = max(0.0, record.lease_until - records.now())
            if lines and into.claim(record, lines, lease):
                result.copied["batches"] += 1
        if progress is not None:
            progress("batches", result.read["batches"])
    return result
