"""Reading a job's results file: the per-step metrics CSV the API attaches as ``result_files``,
served base64-encoded (a plain CSV is read as it is). ``step`` is the first column; cells left
empty (validation metrics between evaluations) read as None.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import math


class ResultsFileError(ValueError):
    """The file is not a metrics CSV with a ``step`` column."""


def _text(data: bytes) -> str:
    stripped = data.strip()
    if not stripped.startswith(b"step"):
        try:
            decoded = base64.b64decode(stripped, validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        if decoded.strip().startswith(b"step"):
            stripped = decoded.strip()
    try:
        return stripped.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"not UTF-8 text (byte {exc.start})") from None


def _number(cell: str, line: int, column: str) -> float | None:
    cell = cell.strip()
    if not cell:
        return None
    try:
        value = float(cell)
    except ValueError:
        raise ResultsFileError(
            f"line {line}, column {column}: {cell[:20]!r} is not a number"
        ) from None
    return value if math.isfinite(value) else None


def parse_results_file(data: bytes) -> tuple[list[str], list[list[float | None]]]:
    """``(header, rows)`` of a results file; raises `ResultsFileError` saying what is wrong."""
    reader = csv.reader(io.StringIO(_text(data)))
    header = [name.strip() for name in next(reader, [])]
    if not header or header[0] != "step":
        shown = ",".join(header)[:40] if header else "nothing"
        raise ResultsFileError(f"the first column must be 'step' (the file starts with {shown!r})")
    rows: list[list[float | None]] = []
    for line, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise ResultsFileError(f"line {line} has {len(cells)} cells for {len(header)} columns")
        row = [_number(cell, line, name) for cell, name in zip(cells, header, strict=True)]
        if row[0] is None:
            raise ResultsFileError(f"line {line} has no step")
        rows.append(row)
    return header, rows
