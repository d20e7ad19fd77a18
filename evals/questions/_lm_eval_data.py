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
from evals.questions._dataset import read_rows
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
    as_csv = config.get("dataset_path") == "csv"
    docs = [doc for path in splits[name] for doc in _read(path, as_csv)]
    if not docs:
        raise config.error(key, f"the split {name!r} has no rows")
    return docs


def _read(path: Path, as_csv: bool) -> list[Doc]:
    """The rows of a CSV file (numbers read as numbers), a JSON lines file, or a JSON file
    holding a list of objects."""
    try:
        text = path.read_text(encoding="utf-8-sig")
        if as_csv or not text.lstrip().startswith("["):
            _, rows = read_rows(path, as_csv=as_csv, numbers=True)
            return [Doc(f"{path}:{line}", row) for line, row in rows]
        items = json.loads(text)
    except (OSError, UnicodeDecodeError) as error:
        raise QuestionFileError(f"{path}: cannot read: {error}") from None
    except json.JSONDecodeError as error:
        raise QuestionFileError(f"{path}:{error.lineno}: not valid JSON: {error.msg}") from None
    except ValueError as error:
        raise QuestionFileError(str(error)) from None
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise QuestionFileError(f"{path}: item {number}: expected a JSON object (one row)")
    return [Doc(f"{path}: item {number}", item) for number, item in enumerate(items, start=1)]
