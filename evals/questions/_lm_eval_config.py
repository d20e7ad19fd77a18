"""An lm-evaluation-harness task file read (its `include`s under it, where each key was written)
and checked (unknown keys, `!function` tags and what labmgr cannot honour are refused), and its
local data: `dataset_kwargs.data_files` as splits, and a split's rows with their `file:line`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evals.errors import QuestionFileError
from evals.questions._dataset import read_rows

_READ = {
    "task",
    "dataset_path",
    "dataset_name",
    "dataset_kwargs",
    "training_split",
    "validation_split",
    "test_split",
    "fewshot_split",
    "fewshot_config",
    "doc_to_text",
    "doc_to_target",
    "doc_to_choice",
    "description",
    "target_delimiter",
    "fewshot_delimiter",
    "num_fewshot",
    "output_type",
    "generation_kwargs",
    "metric_list",
    "repeats",
    "unsafe_code",
}
_IGNORED = {  # they name, describe or tag a task but change nothing asked or scored
    "task_alias",
    "tag",
    "group",
    "metadata",
    "should_decontaminate",
    "doc_to_decontamination_query",
    "batch_size",
}
_REFUSED = {
    "process_docs": "runs Python from the task's folder, which labmgr never does; write the "
    "data file with the columns the templates need",
    "process_results": "scores with Python from the task's folder, which labmgr never does; "
    "use metric_list with acc or exact_match",
    "custom_dataset": "builds the data with Python; point dataset_kwargs.data_files at a file",
    "use_prompt": "promptsource prompts are not supported; write doc_to_text, doc_to_target "
    "and doc_to_choice",
    "doc_to_image": "images are not asked; labmgr asks text only",
    "doc_to_audio": "audio is not asked; labmgr asks text only",
    "filter_list": "filters that extract an answer from the generation are not supported; "
    "the whole answer, cut at the first `until` string, is compared with the target",
    "gen_prefix": "an assistant prefix is not supported; end doc_to_text with it instead",
}


@dataclass(frozen=True)
class _Function:
    """A `!function module.name` tag: Python of the task's folder, never imported."""

    name: str


class _TaskLoader(yaml.SafeLoader):
    """YAML as lm-eval reads a task, `!function` tags kept as `_Function`s to refuse."""


_TaskLoader.add_constructor("!function", lambda _, node: _Function(str(node.value)))


@dataclass
class TaskConfig:
    """A task's keys (those of its `include`s under its own) and where each was written."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, tuple[Path, int]] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        value = self.values.get(key)
        return default if value is None else value

    def folder(self, key: str) -> Path:
        return self.origins[key][0].parent

    def error(self, key: str, message: str) -> QuestionFileError:
        """`FILE:LINE: field 'KEY': message`, at the line of the key's top-level name."""
        top = key.split(".")[0].split("[")[0]
        if top not in self.origins:
            return QuestionFileError(f"{self.path}: field '{key}': {message}")
        file, line = self.origins[top]
        return QuestionFileError(f"{file}:{line}: field '{key}': {message}")


def _parse(path: Path) -> tuple[Any, dict[str, int]]:
    text = path.read_text(encoding="utf-8")
    node = yaml.compose(text, Loader=_TaskLoader)
    data = yaml.load(text, Loader=_TaskLoader)  # a SafeLoader with one more tag
    keys = node.value if isinstance(node, yaml.MappingNode) else []
    return data, {str(key.value): key.start_mark.line + 1 for key, _ in keys}


def is_task_node(node: yaml.Node | None) -> bool:
    return isinstance(node, yaml.MappingNode) and any(k.value == "task" for k, _ in node.value)


def read_task_config(path: Path, chain: tuple[Path, ...] = ()) -> TaskConfig:
    """The task's keys over those of its `include`s (a path relative to the including file)."""
    try:
        data, lines = _parse(path)
    except (OSError, UnicodeDecodeError) as error:
        raise QuestionFileError(f"{path}: cannot read: {error}") from None
    except yaml.YAMLError as error:
        raise QuestionFileError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise QuestionFileError(
            f"{path}: not an lm-evaluation-harness task file (expected a mapping of task keys)"
        )
    config = TaskConfig(path)
    own = TaskConfig(
        path,
        {str(k): v for k, v in data.items()},
        {str(k): (path, lines.get(str(k), 1)) for k in data},
    )
    include = own.values.pop("include", None)
    if include is not None:
        base = own.folder("include") / str(include)
        if not isinstance(include, str) or not base.is_file():
            raise own.error(
                "include",
                f"no file {base}; labmgr reads include as a path relative to the file, not "
                "as the name of a task lm-eval has registered",
            )
        if base.resolve() in chain:
            raise own.error("include", f"{base} includes itself")
        config = read_task_config(base, (*chain, path.resolve()))
        config.path = path
    config.values.update(own.values)
    config.origins.update(own.origins)
    return config


def _function_in(value: Any, key: str) -> tuple[str, _Function] | None:
    if isinstance(value, _Function):
        return key, value
    items: Any = ()
    if isinstance(value, Mapping):
        items = ((f"{key}.{k}", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{key}[{i}]", v) for i, v in enumerate(value))
    found = (_function_in(inner, inner_key) for inner_key, inner in items)
    return next((f for f in found if f is not None), None)


def check_keys(config: TaskConfig) -> None:
    """Every key is one lm-eval has and labmgr can honour, and no value is Python."""
    for key, value in config.values.items():
        if key not in _READ | _IGNORED | set(_REFUSED):
            raise config.error(
                key, "not a key of lm-evaluation-harness task files that labmgr knows"
            )
        found = _function_in(value, key)
        if found is not None:
            raise config.error(
                found[0],
                f"!function {found[1].name} runs Python from the task's folder, which "
                "labmgr never does; write it as a Jinja template or a column name",
            )
        if key in _REFUSED and value is not None:
            raise config.error(key, _REFUSED[key])
    if config.get("repeats", 1) != 1:
        raise config.error("repeats", "only 1 is supported (one answer per row is scored)")
    if config.get("unsafe_code", False):
        raise config.error("unsafe_code", "labmgr runs no code from task files")
    fewshot_config = config.get("fewshot_config", {})
    if not isinstance(fewshot_config, Mapping) or set(fewshot_config) - {"sampler"}:
        raise config.error(
            "fewshot_config", "only 'sampler: first_n' is supported (the first examples)"
        )
    if fewshot_config.get("sampler", "first_n") not in ("first_n", "default"):
        raise config.error(
            "fewshot_config.sampler", "only first_n is supported (the first examples)"
        )


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
    key, folder = "dataset_kwargs.data_files", config.folder("dataset_kwargs")
    splits: dict[str, list[Path]] = {}
    for split, paths in named.items():
        splits[str(split)] = []
        for entry in paths if isinstance(paths, list) else [paths]:
            if not isinstance(entry, str) or "://" in entry:
                raise config.error(key, f"{entry!r} is not a local file path")
            if not (folder / entry).is_file():
                raise config.error(
                    key, f"no file {folder / entry} (paths are relative to the task file)"
                )
            splits[str(split)].append(folder / entry)
    return splits


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
