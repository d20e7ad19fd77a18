"""Sample frames to Parquet and back, exactly: object columns stored as the Arrow type their
values share (mixed ones as JSON per cell), each column's kind and dtype in the metadata."""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

_META_KEY = b"labmgr.samples"
_ITEMS = "__items__"
_MAPS = {
    "map:str": pa.map_(pa.string(), pa.float64()),
    "map:int": pa.map_(pa.int64(), pa.float64()),
}


def _to_json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value) and _ITEMS not in value:
            return {key: _to_json_ready(v) for key, v in value.items()}
        return {_ITEMS: [[key, _to_json_ready(v)] for key, v in value.items()]}
    if isinstance(value, list | tuple):
        return [_to_json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return value.item()
    return value


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and _ITEMS in value:
            return {key: _from_json(v) for key, v in value[_ITEMS]}
        return {key: _from_json(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _kind(values: list[Any]) -> str:
    """How an object column is stored: `text`, `float`, `map:str`, `map:int` or `json`."""
    present = [v for v in values if v is not None]
    types = set(map(type, present))
    if types <= {str}:
        return "text"
    if types == {float}:
        return "float"
    if types != {dict}:
        return "json"
    distinct = list({id(v): v for v in present}.values())  # rows may share one verdict's dict
    if set(map(type, chain.from_iterable(v.values() for v in distinct))) - {float}:
        return "json"
    keys = set(map(type, chain.from_iterable(distinct)))
    if keys <= {str}:
        return "map:str"
    if keys == {int}:
        return "map:int"
    return "json"


def _stored(values: list[Any], kind: str) -> pa.Array:
    if kind == "text":
        return pa.array(values, type=pa.string())
    if kind == "float":
        return pa.array(values, type=pa.float64(), from_pandas=False)
    if kind in _MAPS:
        return _map_array(values, _MAPS[kind])
    encoded = [json.dumps(_to_json_ready(v), ensure_ascii=False) for v in values]
    return pa.array(encoded, type=pa.string())


def _map_array(values: list[dict[Any, float] | None], map_type: pa.MapType) -> pa.Array:
    """`pa.array(values, type=map_type)`, built from the flat keys and values of each distinct
    dict once (rows share one verdict's dicts), then taken per row: several times faster."""
    distinct: dict[int, dict[Any, float]] = {}  # by id, in order of first use
    for value in values:
        if value is not None:
            distinct.setdefault(id(value), value)
    at = {key: i for i, key in enumerate(distinct)}
    rows = [None if value is None else at[id(value)] for value in values]
    offsets: list[int] = [0]
    keys: list[Any] = []
    items: list[float] = []
    for value in distinct.values():
        keys.extend(value)
        items.extend(value.values())
        offsets.append(len(keys))
    maps = pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.array(keys, map_type.key_type),
        pa.array(items, map_type.item_type),
        type=map_type,
    )
    return maps.take(pa.array(rows, pa.int32()))


def write_samples(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write `frame` to a Parquet file (zstd) that `read_samples` reads back exactly."""
    path = Path(path)
    stored = frame.reset_index(drop=True)
    kinds: dict[str, str] = {}
    plain = [name for name in stored.columns if stored[name].dtype != object]
    table = pa.Table.from_pandas(stored[plain], preserve_index=False)
    arrays: dict[str, pa.Array] = {}
    for name in stored.columns:
        if stored[name].dtype == object:
            values = stored[name].tolist()
            kinds[str(name)] = kind = _kind(values)
            arrays[str(name)] = _stored(values, kind)
    columns = [
        arrays[str(name)] if str(name) in arrays else table.column(str(name))
        for name in stored.columns
    ]
    table = pa.Table.from_arrays(columns, names=[str(name) for name in stored.columns])
    meta = {
        "format": 2,
        "object_columns": kinds,
        "dtypes": {str(name): str(dtype) for name, dtype in frame.dtypes.items()},
    }
    table = table.replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    pq.write_table(table, temporary, compression="zstd")
    temporary.replace(path)
    return path


def _dicts(column: pa.ChunkedArray) -> list[dict[Any, float] | None]:
    """A map column as dicts, built from its flat keys and values (several times faster than
    Arrow's own conversion)."""
    found: list[dict[Any, float] | None] = []
    for chunk in column.chunks:
        keys_array, values = chunk.keys, chunk.items
        offsets = chunk.offsets.to_numpy()
        if len(keys_array) != offsets[-1] - offsets[0]:  # children not cut to the slice
            keys_array = keys_array.slice(offsets[0], offsets[-1] - offsets[0])
            values = values.slice(offsets[0], offsets[-1] - offsets[0])
        offsets = (offsets - offsets[0]).tolist()
        encoded = keys_array.dictionary_encode()
        distinct = encoded.dictionary.to_pylist()
        indices = encoded.indices.to_numpy(zero_copy_only=False).tolist()
        keys: Sequence[Any] = (
            operator.itemgetter(*indices)(distinct)
            if len(indices) > 1
            else [distinct[i] for i in indices]
        )
        numbers = values.to_numpy(zero_copy_only=False).tolist()
        valid = chunk.is_valid().to_numpy(zero_copy_only=False).tolist()
        for row, start in enumerate(offsets[:-1]):
            end = offsets[row + 1]
            found.append(
                dict(zip(keys[start:end], numbers[start:end], strict=True)) if valid[row] else None
            )
    return found


def read_samples(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a file written by `write_samples` (any other Parquet file as is); with `columns`,
    only those."""
    table = pq.read_table(Path(path), columns=list(columns) if columns is not None else None)
    raw = (pq.read_schema(Path(path)).metadata or {}).get(_META_KEY)
    if raw is None:
        return table.to_pandas()
    meta = json.loads(raw)
    kinds: dict[str, str] = dict(meta.get("object_columns", {}))
    for name in meta.get("json_columns", []):  # files written before format 2
        kinds[name] = "json"
    names = table.column_names
    objects = [name for name in names if name in kinds]
    frame = table.drop_columns(objects).to_pandas()
    for name in objects:
        kind = kinds[name]
        column = table.column(name)
        if kind in _MAPS:
            values: list[Any] = _dicts(column)
        elif kind == "json":
            values = [_from_json(json.loads(v)) for v in column.to_pylist()]
        else:
            values = column.to_pylist()
        frame.insert(names.index(name), name, pd.Series(values, dtype=object, name=name))
    for name, dtype in meta.get("dtypes", {}).items():
        if name in frame.columns and str(frame[name].dtype) != dtype and dtype != "object":
            frame[name] = frame[name].astype(dtype)
    return frame
