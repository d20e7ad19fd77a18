"""Reading llmcomp's registry files: JSONL lines with their numbers, JSON objects, fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from labmgr.errors import LabmgrError


def jsonl_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of `path` as a JSON object, with its line number (read whole)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise LabmgrError(
            f"{path} is not UTF-8 text (byte {exc.start + 1}), so it is not an llmcomp registry "
            "file.",
            hint="Pass the data_dir llmcomp wrote (its .jsonl files are UTF-8 text).",
        ) from None
    except OSError as exc:
        raise LabmgrError(
            f"Cannot read {path}: {exc.strerror or exc}.",
            hint="Check the file's permissions, or copy the registry somewhere readable.",
        ) from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LabmgrError(
                f"{path}:{number}: not valid JSON ({exc.msg}, column {exc.colno}).",
                hint="Fix or remove that line, then import again (nothing was recorded "
                "from this file).",
            ) from None
        if not isinstance(row, dict):
            raise LabmgrError(f"{path}:{number}: expected a JSON object.")
        rows.append((number, row))
    return rows


def text_field(row: dict[str, Any], key: str) -> str | None:
    value = row.get(key)
    return str(value) if value is not None and value != "" else None
