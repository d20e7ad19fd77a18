"""Dataset rows: a question's `dataset` (a `.jsonl` or `.csv` file, or inline rows) whose
every row fills the `{field}` placeholders of the paraphrases, choices and target; and
`read_rows`, the one reader of JSON lines and CSV files, each row with its line."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evals.questions._templates import render_placeholders, template_names

_WHOLE_FIELD = "{%s}"

Rows = list[tuple[int, dict[str, Any]]]
"""Rows of a file, each with the line it starts on."""


def read_rows(
    path: Path, *, as_csv: bool | None = None, numbers: bool = False, bad: list[str] | None = None
) -> tuple[list[str], Rows]:
    """The fields and rows of a CSV file (a header, then the rows; `as_csv` None: by the
    suffix) or a JSON lines file (blank lines skipped). `numbers`: a CSV column whose every
    filled cell is a number is read as numbers, empty cells as None (as `datasets` does).
    A bad row is a ValueError naming the file and line, or with `bad` one sentence there
    and the row left out. OSError and UnicodeDecodeError are the caller's to word."""
    text = path.read_text(encoding="utf-8-sig")
    if as_csv or (as_csv is None and path.suffix.lower() == ".csv"):
        try:
            return _csv_rows(path, text, numbers, bad)
        except csv.Error as error:
            raise ValueError(f"{path}: not a CSV file ({error})") from None
    fields: dict[str, None] = {}
    rows: Rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            _bad_json_line(bad, f"{path}:{number}", f"not valid JSON ({error.msg})", error.msg)
            continue
        if not isinstance(row, dict):
            problem = f"not a JSON object, but a {type(row).__name__}"
            _bad_json_line(bad, f"{path}:{number}", problem)
            continue
        fields.update(dict.fromkeys(str(k) for k in row))
        rows.append((number, row))
    return list(fields), rows


def _bad_json_line(bad: list[str] | None, where: str, problem: str, detail: str = "") -> None:
    """Raise `problem`, or with `bad` note there that the line is no JSON object (`detail`)."""
    if bad is None:
        raise ValueError(f"{where}: {problem}")
    bad.append(f"{where}: not a JSON object" + (f" ({detail})" if detail else ""))


def _csv_rows(
    path: Path, text: str, numbers: bool, bad: list[str] | None
) -> tuple[list[str], Rows]:
    lines = io.StringIO(text, newline="").readlines()
    reader = csv.DictReader(lines)
    if not reader.fieldnames:
        raise ValueError(f"{path}: empty CSV file; the first line names the fields")
    fields = list(reader.fieldnames)
    rows: Rows = []
    end = reader.line_num
    for row in reader:
        start = end + 1
        while not lines[start - 1].strip("\r\n"):  # blank lines the reader skipped
            start += 1
        end = reader.line_num
        if None in row:
            problem = f"{path}:{start}: more values than the {len(fields)} fields of the header"
            if bad is None:
                raise ValueError(problem)
            bad.append(problem)
            continue
        rows.append((start, row))
    if numbers:
        for name in fields:
            _read_numbers([row for _, row in rows], name)
    return fields, rows


def _read_numbers(rows: list[dict[str, Any]], name: str) -> None:
    filled = [row[name] for row in rows if row[name]]
    values: dict[str, Any] = {cell: cell for cell in filled}
    for kind in (float, int):  # numbers if every cell is one, whole numbers if all are
        try:
            values = {cell: kind(cell) for cell in filled}
        except ValueError:
            break
    for row in rows:
        row[name] = values.get(row[name])


class Dataset(BaseModel):
    """The rows of a question's dataset, and where each was read (for messages)."""

    model_config = ConfigDict(frozen=True)

    rows: list[dict[str, Any]]
    places: list[str]
    """`file:line` of each row read from a file, `row N` (0-based) of an inline row."""

    @classmethod
    def read(cls, value: Any) -> Dataset:
        """A dataset from a path (`.jsonl`, `.csv`) or a list of mappings; ValueError naming
        the file and line (or the row) otherwise."""
        if isinstance(value, Dataset):
            return value
        if isinstance(value, str | Path):
            return _read_file(Path(value))
        if isinstance(value, Sequence) and not isinstance(value, str | bytes):
            rows: list[dict[str, Any]] = []
            for number, row in enumerate(value):
                if not isinstance(row, Mapping):
                    raise ValueError(
                        f"row {number} is a {type(row).__name__}; each row must be a mapping "
                        "of field to value"
                    )
                rows.append({str(k): v for k, v in row.items()})
            return cls(rows=rows, places=[f"row {n}" for n in range(len(rows))])
        raise ValueError(
            f"must be a .jsonl or .csv file or a list of rows, got {type(value).__name__}"
        )

    def items(self) -> list[str]:
        """Each row's `id` field as text, else its 0-based row number."""
        items = [str(row["id"]) if "id" in row else str(n) for n, row in enumerate(self.rows)]
        seen: dict[str, int] = {}
        for number, item in enumerate(items):
            if item in seen:
                raise ValueError(
                    f"{self.places[number]}: id {item!r} is also the id of "
                    f"{self.places[seen[item]]}; each row needs its own id"
                )
            seen[item] = number
        return items


def _read_file(path: Path) -> Dataset:
    if path.suffix.lower() not in (".jsonl", ".csv"):
        raise ValueError(f"{path}: a dataset is a .jsonl or .csv file")
    try:
        _, rows = read_rows(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read: {error}") from None
    if not rows:
        raise ValueError(f"{path}: the dataset has no rows")
    return Dataset(rows=[row for _, row in rows], places=[f"{path}:{line}" for line, _ in rows])


def fill(template: Any, row: Mapping[str, Any], place: str, option: str) -> Any:
    """`template` with the row's fields: a text that is one whole `{field}` gives the field's
    value as it is (a list of choices, an int index), any other text has its `{field}`s
    filled (other braces stay literal), a list is filled item by item. ValueError naming the
    row, the option and the missing field."""
    if isinstance(template, list):
        return [fill(t, row, place, option) for t in template]
    if not isinstance(template, str):
        return template
    names = template_names(template)
    missing = sorted(name for name in names if name not in row)
    if missing:
        having = ", ".join(sorted(row)) or "none"
        raise ValueError(
            f"{place}: option '{option}' uses the field {missing[0]!r}, which this row does "
            f"not have (its fields: {having})"
        )
    if len(names) == 1 and template == _WHOLE_FIELD % next(iter(names)):
        return row[next(iter(names))]
    return render_placeholders(template, {name: as_text(row[name]) for name in names})


def as_text(value: Any) -> str:
    """A field's value as prompt text (lists and mappings as JSON)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else str(value)
