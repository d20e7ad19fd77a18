"""One request's cached samples, held column by column."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from evals.cache._requests import SampleResult

__all__ = ["CachedLookup", "CachedSamples", "PackedChunk"]


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
        "reasoning_tokens",
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
        self.reasoning_tokens: Sequence[float | None]
        if not numbered:
            self.sample_ix = range(len(rows))
            (
                self.content,
                self.logprobs_json,
                self.finish_reason,
                self.prompt_tokens,
                self.completion_tokens,
                self.reasoning_tokens,
            ) = zip(*rows, strict=True) if rows else ((),) * 6
        else:
            (
                self.sample_ix,
                self.content,
                self.logprobs_json,
                self.finish_reason,
                self.prompt_tokens,
                self.completion_tokens,
                self.reasoning_tokens,
            ) = zip(*rows, strict=True) if rows else ((),) * 7
        self._positions: dict[int, int] | None = None

    @classmethod
    def from_columns(
        cls,
        content: Sequence[str | None],
        logprobs_json: Sequence[str | None],
        finish_reason: Sequence[str | None],
        prompt_tokens: Sequence[float],
        completion_tokens: Sequence[float],
        reasoning_tokens: Sequence[float | None],
    ) -> CachedSamples:
        """Samples 0…len(content)-1 from equally long columns."""
        samples = cls.__new__(cls)
        samples.sample_ix = range(len(content))
        samples.content = content
        samples.logprobs_json = logprobs_json
        samples.finish_reason = finish_reason
        samples.prompt_tokens = prompt_tokens
        samples.completion_tokens = completion_tokens
        samples.reasoning_tokens = reasoning_tokens
        samples._positions = None
        return samples

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
            self.reasoning_tokens[position],
        )

    def __contains__(self, ix: object) -> bool:
        return self._position(ix) is not None

    def __iter__(self) -> Iterator[int]:
        return iter(self.sample_ix)

    def __len__(self) -> int:
        return len(self.sample_ix)

    def __repr__(self) -> str:
        return f"CachedSamples({dict(self.items())!r})"


class PackedChunk(Protocol):
    """Complete samples of a chunk of requests, column by column (see `evals.cache._packs`)."""

    counts: Mapping[str, int]

    def samples(self) -> dict[str, CachedSamples]: ...

    def first_samples(self, keys: Sequence[str]) -> list[SampleResult]:
        """Sample 0 of each of these requests of the chunk."""
        ...


class CachedLookup(Mapping[str, CachedSamples]):
    """What a bulk read found, by request key: samples read row by row, and chunks read in
    full (packed), whose per-request views are made only when a key of theirs is asked for."""

    def __init__(self) -> None:
        self._samples: dict[str, CachedSamples] = {}
        self._chunks: dict[str, PackedChunk] = {}

    def add_samples(self, found: Mapping[str, CachedSamples]) -> None:
        """Add (or replace with a newer read) requests read row by row."""
        for key in found.keys() & self._chunks.keys():
            del self._chunks[key]
        self._samples.update(found)

    def add_chunk(self, chunk: PackedChunk) -> None:
        """Add (or replace with a newer read) a chunk read in full."""
        for key in chunk.counts:
            self._samples.pop(key, None)
        self._chunks.update(dict.fromkeys(chunk.counts, chunk))

    def update(self, newer: CachedLookup) -> None:
        """Take in a later read of some of the same requests."""
        for chunk in dict.fromkeys(newer._chunks.values()):
            self.add_chunk(chunk)
        self.add_samples(newer._samples)

    def chunk_of(self, key: str) -> PackedChunk | None:
        """The complete chunk holding this request, if it was read as one."""
        return self._chunks.get(key)

    def first_samples(self, keys: Sequence[str]) -> list[SampleResult | None]:
        """Sample 0 of each request (None where it was not found), read from the chunks'
        columns without a per-request view (one-sample requests: judge verdicts)."""
        firsts: list[SampleResult | None] = [None] * len(keys)
        in_chunks: dict[int, tuple[PackedChunk, list[int]]] = {}
        for position, key in enumerate(keys):
            found = self._samples.get(key)
            if found is not None:
                if len(found) and found.sample_ix[0] == 0:
                    firsts[position] = SampleResult(
                        found.content[0],
                        found.logprobs_json[0],
                        found.finish_reason[0],
                        found.prompt_tokens[0],
                        found.completion_tokens[0],
                        found.reasoning_tokens[0],
                    )
                continue
            chunk = self._chunks.get(key)
            if chunk is not None and chunk.counts[key] > 0:
                in_chunks.setdefault(id(chunk), (chunk, []))[1].append(position)
        for chunk, positions in in_chunks.values():
            for position, sample in zip(
                positions, chunk.first_samples([keys[p] for p in positions]), strict=True
            ):
                firsts[position] = sample
        return firsts

    def missing(self, key: str, count: int) -> list[int]:
        """Which of samples 0…count-1 of a request were not found."""
        chunk = self._chunks.get(key)
        if chunk is not None and chunk.counts[key] >= count:
            return []
        found = self.get(key)
        return list(range(count)) if found is None else found.missing(count)

    def __getitem__(self, key: str) -> CachedSamples:
        found = self._samples.get(key)
        if found is not None:
            return found
        chunk = self._chunks[key]
        views = chunk.samples()
        self._samples.update(views)
        return views[key]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._samples), **dict.fromkeys(self._chunks)})

    def __len__(self) -> int:
        return len(self._samples.keys() | self._chunks.keys())
