"""What a database must do to hold the response cache: the statements the `Cache` needs, one
implementation per database (`_sqlite.SqliteBackend`, `_postgres.PostgresBackend`).

Everything above this line of the room (packs, claims, copying) is written once, in terms of
these methods; everything below it is SQL in one dialect and one driver. Rows travel as plain
tuples in the column order of `SAMPLE_COLUMNS`, `ERROR_COLUMNS` and `PACK_COLUMNS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals.cache._samples import CachedSamples

if TYPE_CHECKING:
    from evals.cache._batch_records import BatchRecords

__all__ = [
    "ERROR_COLUMNS",
    "PACK_COLUMNS",
    "SAMPLE_COLUMNS",
    "SCHEMA_VERSION",
    "CacheBackend",
    "CacheStats",
    "Item",
    "StoredCounts",
]

SCHEMA_VERSION = 6
"""2: packs; 3: samples.reasoning_tokens (added in place); 4: claims; 6: no frames table (5
kept pickled frames in SQLite: dropped). A cache made before is brought up to date when
first opened (new tables made, missing columns added, the frames table dropped)."""

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
PACK_COLUMNS = ("digest", "samples", "size", "created", "data")

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
    packs: int = 0
    pack_bytes: int = 0
    claims: int = 0
    size_bytes: int = 0


class CacheBackend(ABC):
    """One database holding the cache's tables: samples, errors, packs, claims, meta."""

    location: str
    """Where the cache is, for people: a file path, or a URL with its password masked."""

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

    # ---- packs --------------------------------------------------------------------------

    @abstractmethod
    def generation(self) -> str | None:
        """The clear counter: packs made from rows read before a clear must not be stored."""

    @abstractmethod
    def read_packs(self, digests: Sequence[str]) -> dict[str, bytes]:
        """The stored packs among these digests."""

    @abstractmethod
    def delete_pack(self, digest: str) -> None:
        """Forget a pack that does not decode (best effort: a busy cache keeps it)."""

    @abstractmethod
    def write_packs(
        self, generation: str | None, rows: Sequence[tuple[Any, ...]], limit_bytes: int
    ) -> None:
        """Store packs unless the cache was cleared since `generation`, then drop the oldest
        beyond `limit_bytes`. A pack is an optional copy: busy, read-only or full, skip it."""

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
        """Per-(question, model) counts, packs and claims (one `GROUP BY` over the cache)."""

    @abstractmethod
    def drop_packs(self) -> int:
        """Delete every pack; returns how many."""

    @abstractmethod
    def clear(self, question: str | None, model: str | None) -> int:
        """Delete samples and errors (all, or of a question's label and/or a model), every
        pack, and bump the generation, in one transaction; returns the samples
        deleted."""

    # ---- copying ------------------------------------------------------------------------

    @abstractmethod
    def export_rows(
        self, table: str, after: tuple[Any, ...] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` rows of `samples`, `errors` or `packs` after the key `after`, in key
        order (samples: (request_key, sample_ix); errors: (request_key, sample_ix, created);
        packs: digest)."""

    @abstractmethod
    def import_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        """Insert rows exported from another cache, skipping those already here; returns
        how many were new."""
