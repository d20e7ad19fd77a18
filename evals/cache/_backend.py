"""What a database must do to hold the response cache: the statements the `Cache` needs, one
implementation per database (`_sqlite.SqliteBackend`, `_postgres.PostgresBackend`).

What is the same for every database (claims, copying) is written once, in terms of these
methods; the backends hold the SQL of one dialect and one driver. Rows travel as plain tuples
in the column order of `SAMPLE_COLUMNS` and `ERROR_COLUMNS`.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from evals.cache._samples import CachedSamples
from evals.errors import CacheError

if TYPE_CHECKING:
    from evals.cache._batch_records import BatchRecords

__all__ = [
    "COPIED_TABLES",
    "ERROR_COLUMNS",
    "SAMPLE_COLUMNS",
    "SAMPLE_FIELDS",
    "SCHEMA_VERSION",
    "CacheBackend",
    "CacheStats",
    "Item",
    "StoredCounts",
    "explained",
    "export_query",
    "scope",
]

SCHEMA_VERSION = 7
"""3: samples.reasoning_tokens (added in place); 4: claims; 6: no frames table; 7: no packs
table. A cache made before is brought up to date when first opened (new tables made,
missing columns added, the frames and packs tables dropped)."""

SAMPLE_COLUMNS = (
    "request_key",
    "sample_ix",
    "model",
    "question",
    "content",
    "logprobs",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "created",
    "reasoning_tokens",
)
ERROR_COLUMNS = ("request_key", "sample_ix", "model", "question", "kind", "message", "created")
SAMPLE_FIELDS = (
    "content, logprobs, finish_reason, prompt_tokens, completion_tokens, reasoning_tokens"
)
"""The columns of a `SampleResult`, in its order."""
COPIED_TABLES = {
    "samples": (SAMPLE_COLUMNS, ("request_key", "sample_ix")),
    "errors": (ERROR_COLUMNS, ("request_key", "sample_ix", "created")),
}
"""The tables a copy carries: their columns, and the key they are exported in order of."""

F = TypeVar("F", bound=Callable[..., Any])
Item = tuple[str, int]
"""One sample of one request: (request key, sample index), what a claim is held on."""


@dataclass(frozen=True)
class CacheStats:
    """Cached samples and recorded errors for one (question, model)."""

    question: str
    model: str
    samples: int
    errors: int
    prompt_tokens: float
    completion_tokens: float


@dataclass
class StoredCounts:
    """What a cache holds, counted by its database."""

    entries: list[CacheStats] = field(default_factory=list)
    claims: int = 0
    size_bytes: int = 0

    @classmethod
    def of(
        cls,
        samples: Iterable[Sequence[Any]],
        errors: Iterable[Sequence[Any]],
        claims: int,
        size_bytes: int,
    ) -> StoredCounts:
        """From rows of (question, model, samples, prompt tokens, completion tokens) and of
        (question, model, errors)."""
        stats: dict[tuple[str, str], list[float]] = {}
        for question, model, count, prompt, completion in samples:
            stats[(question, model)] = [count, 0, prompt, completion]
        for question, model, count in errors:
            stats.setdefault((question, model), [0, 0, 0.0, 0.0])[1] = count
        entries = [
            CacheStats(q, m, int(v[0]), int(v[1]), float(v[2]), float(v[3]))
            for (q, m), v in sorted(stats.items())
        ]
        return cls(entries, claims, size_bytes)


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


def scope(question: str | None, model: str | None, mark: str) -> tuple[str, list[str]]:
    """The `WHERE` clause (empty for everything) and its values selecting a question's rows
    (its judges' verdicts, labelled `<question>/judges`, too) and/or a model's; `mark` is the
    driver's placeholder."""
    conditions, values = [], []
    if question is not None:
        conditions.append(f"(question = {mark} OR question = {mark})")
        values.extend([question, f"{question}/judges"])
    if model is not None:
        conditions.append(f"model = {mark}")
        values.append(model)
    return (f" WHERE {' AND '.join(conditions)}" if conditions else ""), values


def export_query(table: str, name: str, after: bool, mark: str) -> str:
    """The statement reading a batch of a copied table's rows (in database table `name`) in
    key order, after a key when `after`; its values are the key's, then the limit."""
    columns, keys = COPIED_TABLES[table]
    order = ", ".join(keys)
    where = f" WHERE ({order}) > ({', '.join([mark] * len(keys))})" if after else ""
    return f"SELECT {', '.join(columns)} FROM {name}{where} ORDER BY {order} LIMIT {mark}"


class CacheBackend(ABC):
    """One database holding the cache's tables: samples, errors, claims, meta."""

    location: str
    """Where the cache is, for people: a file path, or a URL with its password masked."""

    @abstractmethod
    def driver_errors(self) -> tuple[type[Exception], ...]:
        """The errors of the database (and the OS) that `explain` turns into a `CacheError`."""

    @abstractmethod
    def explain(self, action: str, error: Exception) -> CacheError:
        """The `CacheError` for a driver error met while doing `action` (a verb phrase)."""

    # ---- set-up -------------------------------------------------------------------------

    @abstractmethod
    def exists(self) -> bool:
        """Whether there may be anything to read (a SQLite file not yet made holds nothing)."""

    @abstractmethod
    def check_writable(self) -> None:
        """Raise `CacheError` now if answers could not be stored."""

    @abstractmethod
    def close(self) -> None:
        """Close this thread's connection."""

    # ---- samples ------------------------------------------------------------------------

    @abstractmethod
    def read_all(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        """Every cached sample of these requests, numbered."""

    @abstractmethod
    def read_first(self, wanted: Mapping[str, int]) -> dict[str, CachedSamples]:
        """For `{key: n}`, the cached samples among 0…n-1 (perhaps more when only some are)."""

    @abstractmethod
    def insert_samples(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Store sample rows (an existing (key, index) keeps its first answer) and forget
        their errors, in one transaction. Their claims stay until the buyer finishes: a
        waiter sees a sample landed before it looks at claims."""

    @abstractmethod
    def insert_errors(self, rows: Sequence[tuple[Any, ...]], owner: str | None) -> None:
        """Record failures and release `owner`'s claims on those samples."""

    # ---- claims -------------------------------------------------------------------------

    @abstractmethod
    def claim(self, owner: str, items: Sequence[Item], lease_seconds: float) -> set[Item]:
        """Claim the items nobody holds (or whose claim expired) for `lease_seconds`;
        returns those `owner` holds now. Atomic per item: two owners never both get one."""

    @abstractmethod
    def renew(self, owner: str, lease_seconds: float) -> int:
        """Extend every claim `owner` still holds (the heartbeat); returns how many."""

    @abstractmethod
    def release(self, owner: str, items: Sequence[Item] | None = None) -> None:
        """Give up `owner`'s claims on these items (all of them with None)."""

    @abstractmethod
    def held(self, items: Sequence[Item]) -> set[Item]:
        """The items someone holds a live claim on."""

    @abstractmethod
    def batch_records(self) -> BatchRecords:
        """The batch records kept in the same database (see `evals.cache._batch_records`)."""

    # ---- maintenance --------------------------------------------------------------------

    @abstractmethod
    def counts(self) -> StoredCounts:
        """Per-(question, model) counts and claims (one `GROUP BY` over the cache)."""

    @abstractmethod
    def clear(self, question: str | None, model: str | None) -> int:
        """Delete samples and errors (all, or of a question's label and/or a model), in one
        transaction; returns the samples deleted."""

    # ---- copying ------------------------------------------------------------------------

    @abstractmethod
    def export_rows(
        self, table: str, after: tuple[Any, ...] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` rows of `samples` or `errors` after the key `after`, in key order
        (samples: (request_key, sample_ix); errors: (request_key, sample_ix, created))."""

    @abstractmethod
    def import_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        """Insert rows exported from another cache, skipping those already here; returns
        how many were new."""
