"""An lm-eval task's local data: `dataset_kwargs.data_files` as splits, the split evaluated,
and the rows of a split as Hugging Face `datasets` reads them for `dataset_path: json` (JSON
lines, or a JSON list of objects) and `csv` (a header, numbers read as numbers), each with
the `file:line` it came from."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.errors import QuestionFileError
from evals.questions._lm_eval_config import TaskConfig


@dataclass
class Doc:
    """One row of the data and where it was read (`file:line`)."""

    source: str
    row: dict[str, Any]


def data_splits(config: TaskConfig) -> dict[str, list[Path]]:
    """`dataset_kwargs.data_files` as split -> files, relative to the file naming them (a
    path or a list without split names is the split `train`, as in `datasets`)."""
    dataset_path = config.get("dataset_path")
    if dataset_path not in ("json", "csv"):
        raise config.error(
            "dataset_path",
            f"{dataset_path!r} is not a local file format; labmgr reads local data only "
            "(dataset_path: json or csv with dataset_kwargs.data_files), so save the "
            "dataset as a .jsonl file and point data_files at it",
        )
    if config.get("dataset_name") is not None:
        raise config.error("dataset_name", "a local json or csv dataset has no subsets")
    kwargs = config.get("dataset_kwargs", {})
    if not isinstance(kwargs, Mapping) or "data_files" not in kwargs:
        raise config.error("dataset_kwargs", "data_files is required (the local data)")
    for key in kwargs:
        if key != "data_files":
            raise config.error(f"dataset_kwargs.{key}", "only data_files is supported")
    files = kwargs["data_files"]
    named = files if isinstance(files, Mapping) else {"train": files}
    folder = config.folder("dataset_kwargs")
    splits: dict[str, list[Path]] = {}
    for split, paths in named.items():
        splits[str(split)] = [
            _data_file(config, folder, entry)
            for entry in (paths if isinstance(paths, list) else [paths])
        ]
    return splits


def _data_file(config: TaskConfig, folder: Path, entry: Any) -> Path:
    key = "dataset_kwargs.data_files"
    if not isinstance(entry, str) or "://" in entry:
        raise config.error(key, f"{entry!r} is not a local file path")
    path = folder / entry
    if not path.is_file():
        raise config.error(key, f"no file {path} (paths are relative to the task file)")
    return path


def evaluated_split(config: TaskConfig) -> tuple[str, str]:
    """The split evaluated and its key: test_split, else validation_split."""
    for key in ("test_split", "validation_split"):
        split = config.get(key)
        if split is not None:
            return key, str(split)
    raise config.error(
        "test_split",
        "name the split to evaluate with test_split or validation_split (data_files "
        "given as a path or a list is the split 'train')",
    )


def split_docs(config: TaskConfig, splits: dict[str, list[Path]], key: str, name: str) -> list[Doc]:
    """The rows of the split `name`, which the task's `key` names."""
    if name not in splits:
        raise config.error(
            key, f"no split {name!r} in dataset_kwargs.data_files (it has {', '.join(splits)})"
        )
    reader = _read_csv if config.get("dataset_path") == "csv" else _read_json
    docs = [doc for path in splits[name] for doc in reader(path)]
    if not docs:
        raise config.error(key, f"the split {name!r} has no rows")
    return docs


def _read_json(path: Path) -> list[Doc]:
    """The rows of a JSON lines file, or of a JSON file holding a list of objects."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise QuestionFileError(f"{path}: cannot read: {error}") from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as error:
            raise QuestionFileError(f"{path}:{error.lineno}: not valid JSON: {error.msg}") from None
        numbered = [(f"{path}: item {i + 1}", item) for i, item in enumerate(items)]
    else:
        numbered = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                numbered.append((f"{path}:{number}", json.loads(line)))
            except json.JSONDecodeError as error:
                raise QuestionFileError(
                    f"{path}:{number}: not valid JSON ({error.msg}); each line of a JSON "
                    "lines file is one object"
                ) from None
    for source, item in numbered:
        if not isinstance(item, dict):
            raise QuestionFileError(f"{source}: expected a JSON object (one row of the data)")
    return [Doc(source, item) for source, item in numbered]


def _read_csv(path: Path) -> list[Doc]:
    """The rows of a CSV file with a header, numbers read as numbers (as `datasets` does)."""
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError) as error:
        raise QuestionFileError(f"{path}: cannot read as CSV: {error}") from None
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return [
        Doc(f"{path}:{index + 2}", {str(k): v for k, v in row.items()})
        for index, row in enumerate(records)
    ]
