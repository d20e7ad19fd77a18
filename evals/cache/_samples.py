"""One request's cached samples, held column by column."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from evals.cache._requests import SampleResult


class CachedSamples(Mapping[int, SampleResult]):
    """A mapping `{sample_ix: SampleResult}` held as columns, which bulk readers take directly
    (a reload builds no per-sample objects)."""

    __slots__ = ("_positions", "sample_ix", *SampleResult._fields)
    sample_ix: Sequence[int]
    content: Sequence[str | None]
    logprobs_json: Sequence[str | None]
    finish_reason: Sequence[str | None]
    prompt_tokens: Sequence[float]
    completion_tokens: Sequence[float]
    reasoning_tokens: Sequence[float | None]

    def __init__(self, rows: Sequence[Sequence[Any]], *, numbered: bool = True) -> None:
        """`rows`: (sample_ix, *SampleResult fields), ordered by sample index, no repeats;
        without `numbered`, just the SampleResult fields of samples 0…len(rows)-1."""
        columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else []
        if numbered:
            self.sample_ix = columns.pop(0) if columns else ()
        else:
            self.sample_ix = range(len(rows))
        for name, column in zip(SampleResult._fields, columns or ((),) * 6, strict=True):
            setattr(self, name, column)
        self._positions: dict[int, int] | None = None

    def has_first(self, count: int) -> bool:
        """Whether samples 0…count-1 are all cached (then the first `count` columns): sorted
        unique indices put count-1 at position count-1 only when all before it are there."""
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
        return self.at(position)

    def at(self, position: int) -> SampleResult:
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


class CachedLookup(dict[str, CachedSamples]):
    """What a bulk read found: each request's cached samples, by request key."""

    def first_samples(self, keys: Sequence[str]) -> list[SampleResult | None]:
        """Sample 0 of each request (None where it was not found)."""
        firsts: list[SampleResult | None] = []
        for key in keys:
            found = self.get(key)
            firsts.append(found.at(0) if found is not None and found.has_first(1) else None)
        return firsts

    def missing(self, key: str, count: int) -> list[int]:
        """Which of samples 0…count-1 of a request were not found."""
        found = self.get(key)
        return list(range(count)) if found is None else found.missing(count)
