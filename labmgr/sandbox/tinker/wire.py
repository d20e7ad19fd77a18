"""The few protobuf messages of Tinker's wire protocol (package ``tinker_public``, proto3):
`forward_backward` requests in, `forward_backward` and `sample` results out, in the proto3 wire
format written by hand (no `protobuf` dependency; tests check it against the SDK's code)."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_DTYPES = {1: "<f", 2: "<q", 3: "<i"}
"""Tensor dtype enum → struct format: FLOAT32, INT64, INT32 (BFLOAT16 is not accepted)."""


class WireError(ValueError):
    """A protobuf body that is not the message it should be (the message says what)."""


@dataclass(frozen=True)
class Datum:
    """One training example: the input tokens and the named loss inputs, as flat lists."""

    tokens: tuple[int, ...]
    inputs: dict[str, tuple[float, ...]]


@dataclass(frozen=True)
class ForwardBackwardRequest:
    model_id: str
    seq_id: int
    data: tuple[Datum, ...]
    loss_fn: str
    forward_only: bool


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise WireError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs: an int for varints, bytes for everything else."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, kind = key >> 3, key & 7
        value: int | bytes
        if kind == _VARINT:
            value, pos = _varint(buf, pos)
        elif kind == _BYTES:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + length], pos + length
            if len(value) != length:
                raise WireError("truncated length-delimited field")
        elif kind in (_FIXED64, _FIXED32):
            size = 8 if kind == _FIXED64 else 4
            value, pos = buf[pos : pos + size], pos + size
        else:
            raise WireError(f"unsupported wire type {kind}")
        yield number, value


def _as_bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise WireError("expected a length-delimited field")
    return value


def _as_int(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise WireError("expected a varint field")
    return value


def _array(data: bytes, fmt: str) -> tuple[float, ...]:
    size = struct.calcsize(fmt)
    if len(data) % size:
        raise WireError("an array's byte length is not a multiple of its element size")
    return tuple(x for (x,) in struct.iter_unpack(fmt, data))


def _tensor(buf: bytes) -> tuple[float, ...]:
    dense, dtype = b"", 0
    for number, value in _fields(buf):
        if number == 1:
            dense = _as_bytes(value)
        elif number == 2:
            raise WireError("sparse tensors are not supported; send dense loss inputs")
        elif number == 3:
            dtype = _as_int(value)
    fmt = _DTYPES.get(dtype)
    if fmt is None:
        raise WireError(f"unsupported tensor dtype {dtype}")
    return _array(dense, fmt)


def _datum(buf: bytes) -> Datum:
    tokens: list[int] = []
    inputs: dict[str, tuple[float, ...]] = {}
    for number, value in _fields(buf):
        if number == 1:  # a Chunk: only encoded text is accepted
            for kind, chunk in _fields(_as_bytes(value)):
                if kind != 1:
                    raise WireError("only encoded_text chunks are supported (no images or audio)")
                for field, tokens_bytes in _fields(_as_bytes(chunk)):
                    if field == 1:
                        tokens += (int(t) for t in _array(_as_bytes(tokens_bytes), "<i"))
        elif number == 2:  # map entry {1 key, 2 Tensor}
            entry = dict(_fields(_as_bytes(value)))
            key = _as_bytes(entry.get(1, b"")).decode()
            inputs[key] = _tensor(_as_bytes(entry.get(2, b"")))
    return Datum(tuple(tokens), inputs)


def decode_forward_backward(body: bytes) -> ForwardBackwardRequest:
    """A `ForwardBackwardRequest` body; raises `WireError` for a malformed one."""
    model_id, seq_id, loss_fn, forward_only = "", 0, "", False
    data: list[Datum] = []
    for number, value in _fields(body):
        if number == 1:
            model_id = _as_bytes(value).decode()
        elif number == 2:
            seq_id = _as_int(value)
        elif number == 3:
            data.append(_datum(_as_bytes(value)))
        elif number == 4:
            loss_fn = _as_bytes(value).decode()
        elif number == 6:
            forward_only = bool(_as_int(value))
    return ForwardBackwardRequest(model_id, seq_id, tuple(data), loss_fn, forward_only)


def _key(number: int, kind: int) -> bytes:
    return _encode_varint(number << 3 | kind)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _key(number, _BYTES) + _encode_varint(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
    return _key(number, _VARINT) + _encode_varint(value) if value else b""


def _packed(fmt: str, values: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(values)}{fmt}", *values)


def encode_forward_backward_output(
    logprobs: Sequence[Sequence[float]], metrics: dict[str, float]
) -> bytes:
    """A `ForwardBackwardOutput`: one batched record with each datum's `logprobs`."""
    offsets = [0]
    for row in logprobs:
        offsets.append(offsets[-1] + 4 * len(row))
    batched = (
        _field(1, b"".join(_packed("f", row) for row in logprobs))
        + _field(2, _packed("q", offsets))
        + _int_field(3, 1)  # FLOAT32
    )
    entry = _field(1, b"logprobs") + _field(2, batched)
    record = _field(1, b"ArrayRecord") + _field(2, entry) + _int_field(3, len(logprobs))
    out = _field(1, b"ArrayRecord") + _field(2, record)
    for name, value in metrics.items():
        pair = _field(1, name.encode()) + _key(2, _FIXED64) + struct.pack("<d", value)
        out += _field(3, pair)
    return out


def encode_sample_response(
    sequences: Sequence[tuple[bool, Sequence[int], Sequence[float]]],
    prompt_logprobs: Sequence[float] | None,
) -> bytes:
    """A `SampleResponse`: per sequence (stopped by length?, tokens, logprobs)."""
    out = b""
    for by_length, tokens, logprobs in sequences:
        sequence = _int_field(1, 1 if by_length else 0) + _field(2, _packed("i", tokens))
        out += _field(1, sequence + _field(3, _packed("f", logprobs)))
    if prompt_logprobs is not None:
        out += _field(2, _packed("f", prompt_logprobs))
    return out
