"""Packs: the complete samples of a chunk of requests (say one model's requests for one
question) as Arrow columns, stored as one blob so that reading the same chunk again is one row
instead of one row per sample, and handed to the DataFrame as whole columns.

The first-token logprobs of every sample are also kept read: their tokens and logprobs as
two list columns beside the JSON text, so that a reader of many verdicts (a rating judge)
takes them without parsing 20 numbers from text per verdict.

A pack is a copy, never the source: the per-sample rows stay authoritative. Its digest
covers every request key of the chunk and how many samples of each, and cached samples never
change once written, so a pack found by digest holds exactly what the rows would give.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from itertools import accumulate, chain
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc

from evals.cache._requests import FirstTokenProbs, SampleResult
from evals.cache._samples import CachedSamples

__all__ = ["PACK_FORMAT", "Pack", "UnreadablePack", "chunk_digest"]

PACK_FORMAT = 3  # 2: reasoning_tokens; 3: the first-token logprobs read
_SCHEMA = pa.schema(
    [
        ("content", pa.string()),
        ("logprobs", pa.string()),
        ("finish_reason", pa.string()),
        ("prompt_tokens", pa.float64()),
        ("completion_tokens", pa.float64()),
        ("reasoning_tokens", pa.float64()),
        ("top_tokens", pa.list_(pa.string())),
        ("top_logprobs", pa.list_(pa.float64())),
    ]
)
_FIELDS = (
    "content",
    "logprobs_json",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
)
_NULLABLE_NUMBERS = frozenset({"reasoning_tokens"})


class UnreadablePack(Exception):
    """A stored pack does not decode to the chunk it was filed under."""


def chunk_digest(chunk: Mapping[str, int]) -> str:
    """Names a chunk: its request keys in order, each with its number of samples."""
    lines = [f"pack {PACK_FORMAT}", *(f"{key} {count}" for key, count in chunk.items())]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


class Pack:
    """Samples 0…n-1 of every request of a chunk `{key: n}`, concatenated in chunk order."""

    __slots__ = ("_columns", "_offsets", "_tops", "counts", "table")

    def __init__(self, counts: Mapping[str, int], table: pa.Table) -> None:
        self.counts = counts
        self.table = table
        self._columns: list[list[Any]] | None = None
        self._offsets: dict[str, int] | None = None
        self._tops: list[FirstTokenProbs | None] | None = None

    @classmethod
    def from_samples(cls, counts: Mapping[str, int], found: Mapping[str, CachedSamples]) -> Pack:
        """From per-request samples that hold at least samples 0…n-1 of every request."""
        requests = [(found[key], count) for key, count in counts.items()]
        arrays = []
        for name, field in zip(_FIELDS, _SCHEMA, strict=False):  # the read logprobs last
            values = chain.from_iterable(
                column if len(column) == count else column[:count]
                for column, count in ((getattr(s, name), count) for s, count in requests)
            )
            if name in _NULLABLE_NUMBERS:
                arrays.append(pa.array(list(values), type=field.type))
            elif field.type == pa.float64():
                arrays.append(pa.array(np.fromiter(values, dtype=np.float64)))
            else:
                arrays.append(pa.array(list(values), type=field.type))
        arrays.extend(_read_logprobs(arrays[_FIELDS.index("logprobs_json")].to_pylist()))
        return cls(counts, pa.Table.from_arrays(arrays, schema=_SCHEMA))

    @classmethod
    def from_blob(cls, blob: bytes, counts: Mapping[str, int]) -> Pack:
        """Decode a stored pack; UnreadablePack when it does not fit the chunk."""
        try:
            table = pa.ipc.open_stream(blob).read_all()
        except (pa.ArrowException, OSError, ValueError) as error:
            raise UnreadablePack(str(error)) from error
        if not table.schema.equals(_SCHEMA) or table.num_rows != sum(counts.values()):
            raise UnreadablePack(f"{table.num_rows} rows of {table.schema}")
        tokens, logprobs = (
            table.column(n).combine_chunks() for n in ("top_tokens", "top_logprobs")
        )
        if not tokens.offsets.equals(logprobs.offsets) or tokens.null_count != logprobs.null_count:
            raise UnreadablePack("the read logprobs' tokens and numbers do not line up")
        return cls(counts, table)

    def to_blob(self) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, _SCHEMA) as writer:
            writer.write_table(self.table)
        return bytes(sink.getvalue().to_pybytes())

    def text(self, name: str) -> pa.Array:
        """A text column (`content`, `logprobs`, `finish_reason`) as one Arrow array."""
        return self.table.column(name).combine_chunks()

    def numbers(self, name: str) -> np.ndarray:
        """A token column (`prompt_tokens`, `completion_tokens`, `reasoning_tokens`) as
        float64 (an unknown count is NaN)."""
        return self.table.column(name).to_numpy()

    def _python_columns(self) -> list[list[Any]]:
        """The six columns as Python lists (made once)."""
        if self._columns is None:
            logprobs = self.table.column("logprobs")
            rows = self.table.num_rows
            self._columns = [
                self.table.column("content").to_pylist(),
                [None] * rows if logprobs.null_count == rows else logprobs.to_pylist(),
                self.table.column("finish_reason").to_pylist(),
                self.numbers("prompt_tokens").tolist(),
                self.numbers("completion_tokens").tolist(),
                self.table.column("reasoning_tokens").to_pylist(),
            ]
        return self._columns

    def _read_tops(self) -> list[FirstTokenProbs | None]:
        """Each row's first-token alternatives with their probabilities (made once)."""
        if self._tops is None:
            tokens = self.table.column("top_tokens").combine_chunks()
            if tokens.null_count == len(tokens):
                self._tops = [None] * len(tokens)
            else:
                logprobs = self.table.column("top_logprobs").combine_chunks()
                bounds = tokens.offsets.to_numpy().tolist()
                texts = tokens.values.to_pylist()
                probs = list(map(math.exp, logprobs.values.to_numpy().tolist()))
                valid = tokens.is_valid().to_pylist()
                self._tops = [
                    FirstTokenProbs(texts[start:end], probs[start:end]) if ok else None
                    for start, end, ok in zip(bounds, bounds[1:], valid, strict=False)
                ]
        return self._tops

    def first_samples(self, keys: Sequence[str]) -> list[SampleResult]:
        """Sample 0 of each of these requests (every one in the pack, with samples), their
        logprobs also read (`SampleResult.top`)."""
        if self._offsets is None:
            starts = accumulate(self.counts.values(), initial=0)
            self._offsets = dict(zip(self.counts, starts, strict=False))  # starts has one more
        content, logprobs, finish, prompt, completion, reasoning = self._python_columns()
        tops = self._read_tops()
        rows = [self._offsets[key] for key in keys]
        return [
            SampleResult(
                content[r], logprobs[r], finish[r], prompt[r], completion[r], reasoning[r], tops[r]
            )
            for r in rows
        ]

    def samples(self) -> dict[str, CachedSamples]:
        """Per-request views, for readers that go sample by sample."""
        columns = self._python_columns()
        views: dict[str, CachedSamples] = {}
        start = 0
        for key, count in self.counts.items():
            end = start + count
            views[key] = CachedSamples.from_columns(*(column[start:end] for column in columns))
            start = end
        return views


def _read_logprobs(texts: Sequence[str | None]) -> tuple[pa.Array, pa.Array]:
    """The tokens and the logprobs of each JSON `[[token, logprob], …]`, as two list columns;
    null where there is no text, or it is not exactly that (its reader then parses the
    text, and says what is wrong with it)."""
    tokens: list[list[str] | None] = []
    numbers: list[list[float] | None] = []
    for text in texts:
        pairs = _pairs(text)
        tokens.append(None if pairs is None else [token for token, _ in pairs])
        numbers.append(None if pairs is None else [number for _, number in pairs])
    return (
        pa.array(tokens, type=pa.list_(pa.string())),
        pa.array(numbers, type=pa.list_(pa.float64())),
    )


def _pairs(text: str | None) -> list[tuple[str, float]] | None:
    if not text:
        return None
    try:
        top = json.loads(text)
    except ValueError:
        return None
    if not isinstance(top, list):
        return None
    pairs = []
    for pair in top:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            return None
        number = pair[1]
        if isinstance(number, bool) or not isinstance(number, int | float):
            return None
        pairs.append((pair[0], float(number)))
    return pairs
