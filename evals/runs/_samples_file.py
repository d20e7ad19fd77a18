"""Sample frames to Parquet and back, exactly.

Columns of plain numbers and strings are stored natively. Object columns holding only text
(or None) are stored as Arrow strings, and those holding only floats (or None; NaN stays NaN)
as Arrow doubles with nulls. Other object columns (dict answers, rating `probs` with integer
keys, mixed values) are stored as JSON text, one document per cell, with dicts whose keys are
not strings tagged so their keys come back with their type. How each column was stored, and its
dtype, is kept in the file's metadata, so `read_samples(write_samples(df))` equals `df`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["read_samples", "write_samples"]

_META_KEY = b"labmgr.samples"
_ITEMS = "__items__"


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


def _encode(series: pd.Series) -> list[str | None]:
    return [json.dumps(_to_json_ready(v), ensure_ascii=False) for v in series.tolist()]


def _decode(series: pd.Series) -> pd.Series:
    values = [_from_json(json.loads(v)) for v in series.tolist()]
    return pd.Series(values, index=series.index, dtype=object, name=series.name)


def write_samples(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write `frame` to a Parquet file (zstd) that `read_samples` reads back exactly."""
    path = Path(path)
    stored = frame.reset_index(drop=True).copy()
    encoded: list[str] = []
    kinds: dict[str, str] = {}
    floats: dict[str, list[Any]] = {}
    for name in stored.columns:
        if stored[name].dtype != object:
            continue
        values = stored[name].tolist()
        if all(v is None or type(v) is str for v in values):
            kinds[str(name)] = "text"
        elif all(v is None or type(v) is float for v in values):
            kinds[str(name)] = "float"
            floats[str(name)] = values
            stored[name] = pd.Series([None] * len(values), dtype=object)
        else:
            stored[name] = pd.Series(_encode(stored[name]), dtype=object)
            encoded.append(str(name))
    table = pa.Table.from_pandas(stored, preserve_index=False)
    for name, values in floats.items():
        index = table.schema.get_field_index(name)
        column = pa.array(values, type=pa.float64(), from_pandas=False)
        table = table.set_column(index, name, column)
    meta = {
        "json_columns": encoded,
        "object_columns": kinds,
        "dtypes": {str(name): str(dtype) for name, dtype in frame.dtypes.items()},
    }
    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), _META_KEY: json.dumps(meta).encode()}
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    pq.write_table(table, temporary, compression="zstd")
    temporary.replace(path)
    return path


def read_samples(path: str | Path) -> pd.DataFrame:
    """Read a file written by `write_samples` (any other Parquet file is read as is)."""
    table = pq.read_table(Path(path))
    raw = (table.schema.metadata or {}).get(_META_KEY)
    frame = table.to_pandas()
    if raw is None:
        return frame
    meta = json.loads(raw)
    for name in meta.get("object_columns", {}):
        frame[name] = pd.Series(table.column(name).to_pylist(), dtype=object, name=name)
    for name in meta.get("json_columns", []):
        frame[name] = _decode(frame[name])
    for name, dtype in meta.get("dtypes", {}).items():
        if name in frame.columns and str(frame[name].dtype) != dtype and dtype != "object":
            frame[name] = frame[name].astype(dtype)
    return frame
