"""Dataset rows: a question's `dataset` (a `.jsonl` or `.csv` file, or inline rows) whose
every row fills the `{field}` placeholders of the paraphrases, choices and target; every row ×
paraphrase is one prompt. Rows keep where they came from (`file:line`, or `row N`), so a
template naming a field a row lacks is reported at that row."""

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
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise ValueError(f"{path}: a dataset is a .jsonl or .csv file")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read: {error}") from None
    rows: list[dict[str, Any]] = []
    places: list[str] = []
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            raise ValueError(f"{path}: empty CSV file; the first line names the fields")
        for row in reader:
            if None in row:
                raise ValueError(
                    f"{path}:{reader.line_num}: more values than the {len(reader.fieldnames)} "
                    "fields of the header"
                )
            rows.append(dict(row))
            places.append(f"{path}:{reader.line_num}")
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise ValueError(f"{path}:{number}: not valid JSON ({error})") from None
            if not isinstance(row, dict):
                raise ValueError(
                    f"{path}:{number}: expected a JSON object per line, got {type(row).__name__}"
                )
            rows.append(row)
            places.append(f"{path}:{number}")
    if not rows:
        raise ValueError(f"{path}: the dataset has no rows")
    return Dataset(rows=rows, places=places)


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
