"""lm-evaluation-harness task files as questions: `lm_eval_questions(path)`.

A task YAML whose data is a local JSON lines, JSON or CSV file (`dataset_path: json` or `csv`
with `dataset_kwargs.data_files`) becomes one question in the schema of question files: a
`multiple_choice` question (`output_type: multiple_choice`, metric `acc`) or a `free_form`
question scored by exact match (`generate_until`, metric `exact_match`). Its `dataset` is an
inline list of rows already rendered (`id`, `prompt`, and `choices`/`target`), asked through
the templates `{prompt}`, `{choices}` and `{target}`, which are filled once and never re-read.

What would change the measurement without saying so is refused with one sentence naming the
file, the line and the key: a hub dataset, Python (`!function`, `process_docs`), filters,
metrics other than acc/exact_match, keys lm-eval does not have. `include` is read as a path
next to the task file; `num_fewshot` takes the first examples of the few-shot split.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evals.errors import QuestionFileError
from evals.questions._jinja import resolve, resolve_choices

__all__ = ["is_lm_eval_task", "lm_eval_questions"]

# fmt: off
_READ = {
    "task", "dataset_path", "dataset_name", "dataset_kwargs", "training_split",
    "validation_split", "test_split", "fewshot_split", "fewshot_config", "doc_to_text",
    "doc_to_target", "doc_to_choice", "description", "target_delimiter", "fewshot_delimiter",
    "num_fewshot", "output_type", "generation_kwargs", "metric_list", "repeats", "unsafe_code",
}
_IGNORED = {
    "task_alias", "tag", "group", "metadata", "should_decontaminate",
    "doc_to_decontamination_query", "batch_size",
}
# fmt: on
"""Keys that name, describe or tag a task but change nothing that is asked or scored."""
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
_METRICS = {"multiple_choice": {"acc", "acc_norm"}, "generate_until": {"exact_match"}}
_EXACT_MATCH_OPTIONS = {"ignore_case", "ignore_punctuation", "ignore_numbers", "regexes_to_ignore"}
_EDGE_WHITESPACE = {"^\\s+", "\\s+$", "^\\s*", "\\s*$", "^ ", " $"}
"""`regexes_to_ignore` entries that strip whitespace at the ends, as labmgr always does."""
_GENERATION_KEYS = {"until", "do_sample", "temperature", "max_gen_toks", "top_p"}
_MAX_STOP = 4  # OpenAI's chat API takes at most four stop sequences
_MAX_CHOICES = 26  # one letter each


class _Function:
    """A `!function module.name` tag: Python of the task's folder, never imported."""

    def __init__(self, name: str) -> None:
        self.name = name


class _TaskLoader(yaml.SafeLoader):
    """YAML as lm-eval reads a task, `!function` tags kept as `_Function`s to refuse."""


def _function_tag(loader: yaml.SafeLoader, node: yaml.Node) -> _Function:
    return _Function(str(node.value))


_TaskLoader.add_constructor("!function", _function_tag)


@dataclass
class _Config:
    """A task's keys (those of its `include`s under its own) and where each was written."""

    path: Path
    """The task file."""
    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, tuple[Path, int]] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        value = self.values.get(key)
        return default if value is None else value

    def folder(self, key: str) -> Path:
        """The folder of the file that wrote `key`: its relative paths start there."""
        return self.origins[key][0].parent

    def error(self, key: str, message: str) -> QuestionFileError:
        """`FILE:LINE: field 'KEY': message`, at the line of the key's top-level name (the
        task file alone for a key it lacks)."""
        top = key.split(".")[0].split("[")[0]
        if top not in self.origins:
            return QuestionFileError(f"{self.path}: field '{key}': {message}")
        file, line = self.origins[top]
        return QuestionFileError(f"{file}:{line}: field '{key}': {message}")


def _parse(path: Path) -> tuple[Any, dict[str, int]]:
    """The file's data and the line of each top-level key."""
    text = path.read_text(encoding="utf-8")
    node = yaml.compose(text, Loader=_TaskLoader)
    data = yaml.load(text, Loader=_TaskLoader)  # a SafeLoader with one more tag
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        lines = {str(key.value): key.start_mark.line + 1 for key, _ in node.value}
    return data, lines


def _looks_like_task(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and "task" in data
        and bool({"dataset_path", "output_type", "include"} & set(data))
    )


def is_lm_eval_task(path: str | Path) -> bool:
    """Whether `path` is an lm-evaluation-harness task file (a mapping with `task` and
    `dataset_path`, `output_type` or `include`), not a list of questions."""
    try:
        data, _ = _parse(Path(path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False  # the question-file reader says what is wrong with it
    return _looks_like_task(data)


def _read_config(path: Path, chain: tuple[Path, ...] = ()) -> _Config:
    try:
        data, lines = _parse(path)
    except (OSError, UnicodeDecodeError) as error:
        raise QuestionFileError(f"{path}: cannot read: {error}") from None
    except yaml.YAMLError as error:
        raise QuestionFileError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise QuestionFileError(
            f"{path}: not an lm-evaluation-harness task file (a mapping with 'task' and "
            "'dataset_path' or 'output_type')"
        )
    config = _Config(path)
    own = _Config(
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
        config = _read_config(base, (*chain, path.resolve()))
        config.path = path
    config.values.update(own.values)
    config.origins.update(own.origins)
    return config


def lm_eval_questions(path: str | Path) -> list[dict[str, Any]]:
    """The questions (as `Question.create` options, with `type` and `name`) an lm-eval task
    file becomes; QuestionFileError naming the file, line and key for what cannot be run."""
    path = Path(path)
    config = _read_config(path, ())
    if not _looks_like_task(config.values):
        raise QuestionFileError(
            f"{path}: not an lm-evaluation-harness task file (a mapping with 'task' and "
            "'dataset_path' or 'output_type')"
        )
    return [_Task(config).question()]


def _function_in(value: Any, key: str) -> tuple[str, _Function] | None:
    """The first `!function` tag inside a value, with the key path leading to it."""
    if isinstance(value, _Function):
        return key, value
    if isinstance(value, Mapping):
        items: Any = ((f"{key}.{k}", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{key}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for inner_key, inner in items:
        found = _function_in(inner, inner_key)
        if found is not None:
            return found
    return None


@dataclass
class _Doc:
    """One row of the data and where it was read (`file:line`)."""

    source: str
    row: dict[str, Any]


@dataclass
class _Rendered:
    text: str
    choices: list[str] | None
    target: int | str
    """The right choice's index (multiple choice) or the expected answer."""

    @property
    def answer_text(self) -> str:
        if self.choices is not None and isinstance(self.target, int):
            return self.choices[self.target]
        return str(self.target)


class _Task:
    """One task's keys checked, its data read and its rows rendered."""

    def __init__(self, config: _Config) -> None:
        self.config = config
        self.output_type = "generate_until"

    def question(self) -> dict[str, Any]:
        self._check_keys()
        config = self.config
        name = config.get("task")
        if not isinstance(name, str) or not name:
            raise config.error(
                "task",
                "a task name is needed (a list of tasks is a group file; pass each task file)",
            )
        self.output_type = config.get("output_type", "generate_until")
        if self.output_type not in _METRICS:
            raise config.error(
                "output_type",
                f"{self.output_type!r} is not supported; labmgr asks chat models, so it runs "
                "multiple_choice and generate_until (no loglikelihood of a given text)",
            )
        for key in ("doc_to_text", "doc_to_target"):
            if config.values.get(key) is None:
                raise QuestionFileError(f"{config.origins['task'][0]}: field '{key}' is required")
        if self.output_type == "multiple_choice" and config.values.get("doc_to_choice") is None:
            raise config.error("output_type", "multiple_choice needs doc_to_choice")
        scoring = self._scoring()
        splits = self._splits()
        key, split = self._eval_split()
        docs = self._docs(splits, key, split)
        rows = self._rows(docs, *self._fewshot(splits, split, docs))
        if self.output_type == "multiple_choice":
            return {
                "type": "multiple_choice",
                "name": name,
                "dataset": rows,
                "paraphrases": ["{prompt}"],
                "choices": "{choices}",
                "target": "{target}",
                "score": "sampled",
                "temperature": 0,
            }
        return {
            "type": "free_form",
            "name": name,
            "dataset": rows,
            "paraphrases": ["{prompt}"],
            "target": "{target}",
            "scorer": "exact_match",
            **scoring,
            **self._generation(),
        }

    def _check_keys(self) -> None:
        config = self.config
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

    def _scoring(self) -> dict[str, Any]:
        """The scorer options of `metric_list` (exact_match's), after checking each metric
        fits the output type."""
        config = self.config
        metrics = config.get("metric_list", [])
        if not isinstance(metrics, list):
            raise config.error("metric_list", "expected a list of {metric: NAME, …} entries")
        known = _METRICS[self.output_type]
        options: dict[str, Any] = {"ignore_case": False, "ignore_punctuation": False}
        for index, entry in enumerate(metrics):
            key = f"metric_list[{index}]"
            name = entry.get("metric") if isinstance(entry, Mapping) else entry
            if name not in known:
                raise config.error(
                    key,
                    f"metric {name!r} is not supported for {self.output_type}; labmgr scores "
                    f"{' and '.join(sorted(known))} (the accuracy, column 'correct')",
                )
            if not isinstance(entry, Mapping):
                continue
            for option, value in entry.items():
                if option == "aggregation" and value != "mean":
                    raise config.error(f"{key}.aggregation", "only mean is supported")
                elif option == "higher_is_better" and value is not True:
                    raise config.error(f"{key}.higher_is_better", "accuracy is higher-better")
                elif option in _EXACT_MATCH_OPTIONS and name == "exact_match":
                    options.update(self._exact_match_option(f"{key}.{option}", option, value))
                elif option not in ("metric", "aggregation", "higher_is_better"):
                    raise config.error(f"{key}.{option}", f"not an option of {name}")
        return options if self.output_type == "generate_until" else {}

    def _exact_match_option(self, key: str, option: str, value: Any) -> dict[str, Any]:
        if option in ("ignore_case", "ignore_punctuation"):
            if not isinstance(value, bool):
                raise self.config.error(key, "expected true or false")
            return {option: value}
        if option == "ignore_numbers":
            if value:
                raise self.config.error(key, "ignoring digits is not supported; remove it")
            return {}
        patterns = value if isinstance(value, list) else [value]
        for pattern in patterns:
            if pattern not in _EDGE_WHITESPACE:
                raise self.config.error(
                    key,
                    f"the pattern {pattern!r} cannot be removed from answers in labmgr, which "
                    "compares after ignore_case and ignore_punctuation (and always trims "
                    "whitespace and reads runs of it as one space); remove it or use those",
                )
        return {}

    def _generation(self) -> dict[str, Any]:
        """`generation_kwargs` as request options: greedy unless `do_sample: true`."""
        config = self.config
        kwargs = config.get("generation_kwargs", {})
        if not isinstance(kwargs, Mapping):
            raise config.error("generation_kwargs", "expected a mapping")
        unknown = sorted(set(kwargs) - _GENERATION_KEYS)
        if unknown:
            raise config.error(
                f"generation_kwargs.{unknown[0]}",
                f"not supported; labmgr reads {', '.join(sorted(_GENERATION_KEYS))}",
            )
        until = kwargs.get("until", [config.get("fewshot_delimiter", "\n\n")])
        stops = [until] if isinstance(until, str) else until
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise config.error("generation_kwargs.until", "expected a string or list of strings")
        stops = [stop for stop in stops if stop]
        if len(stops) > _MAX_STOP:
            raise config.error(
                "generation_kwargs.until",
                f"{len(stops)} stop strings; the chat API takes at most {_MAX_STOP}",
            )
        options: dict[str, Any] = {"max_tokens": kwargs.get("max_gen_toks", 256)}
        sampled = kwargs.get("do_sample") is True
        options["temperature"] = kwargs.get("temperature", 1.0) if sampled else 0
        if "top_p" in kwargs and sampled:
            options["top_p"] = kwargs["top_p"]
        if stops:
            options["stop"] = stops
        return options

    def _splits(self) -> dict[str, list[Path]]:
        """`dataset_kwargs.data_files` as split -> files, relative to the file naming them."""
        config = self.config
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
                self._data_file(folder, entry)
                for entry in (paths if isinstance(paths, list) else [paths])
            ]
        return splits

    def _data_file(self, folder: Path, entry: Any) -> Path:
        key = "dataset_kwargs.data_files"
        if not isinstance(entry, str) or "://" in entry:
            raise self.config.error(key, f"{entry!r} is not a local file path")
        path = folder / entry
        if not path.is_file():
            raise self.config.error(key, f"no file {path} (paths are relative to the task file)")
        return path

    def _eval_split(self) -> tuple[str, str]:
        """The split evaluated and its key: test_split, else validation_split."""
        for key in ("test_split", "validation_split"):
            split = self.config.get(key)
            if split is not None:
                return key, str(split)
        raise self.config.error(
            "test_split",
            "name the split to evaluate with test_split or validation_split (data_files "
            "given as a path or a list is the split 'train')",
        )

    def _docs(self, splits: dict[str, list[Path]], key: str, name: str) -> list[_Doc]:
        if name not in splits:
            raise self.config.error(
                key, f"no split {name!r} in dataset_kwargs.data_files (it has {', '.join(splits)})"
            )
        reader = _read_csv if self.config.get("dataset_path") == "csv" else _read_json
        docs = [doc for path in splits[name] for doc in reader(path)]
        if not docs:
            raise self.config.error(key, f"the split {name!r} has no rows")
        return docs

    def _fewshot(
        self, splits: dict[str, list[Path]], evaluated: str, docs: list[_Doc]
    ) -> tuple[int, list[_Doc], bool]:
        """How many examples each prompt shows, the rows they come from, and whether those
        are the evaluated rows (then a row is never its own example)."""
        config = self.config
        shots = config.get("num_fewshot", 0)
        if not isinstance(shots, int) or isinstance(shots, bool) or shots < 0:
            raise config.error("num_fewshot", "expected a whole number, 0 or more")
        if shots == 0:
            return 0, [], False
        for key in ("fewshot_split", "training_split", "validation_split"):
            split = config.get(key)
            if split is None:
                continue
            same = str(split) == evaluated
            pool = docs if same else self._docs(splits, key, str(split))
            if len(pool) < shots + int(same):
                raise config.error(
                    "num_fewshot",
                    f"{shots} examples asked, but the split {split!r} has {len(pool)} rows"
                    + (", one of them the row asked" if same else ""),
                )
            return shots, pool[: shots + int(same)], same
        raise config.error(
            "num_fewshot", "examples need fewshot_split (or training_split) to come from"
        )

    def _rows(
        self, docs: list[_Doc], shots: int, pool: list[_Doc], same_split: bool
    ) -> list[dict[str, Any]]:
        """One row per document: its id, its prompt (description, examples, text) and its
        choices and target."""
        ids: list[Any] = [doc.row.get("id") for doc in docs]
        own_ids = all(isinstance(i, str | int) and not isinstance(i, bool) for i in ids)
        if not own_ids or len({str(i) for i in ids}) != len(ids):
            ids = list(range(len(docs)))
        examples = [self._render(doc) for doc in pool]
        target_delimiter = self.config.values.get("target_delimiter", " ")
        fewshot_delimiter = self.config.values.get("fewshot_delimiter", "\n\n")
        rows = []
        for doc, item in zip(docs, ids, strict=True):
            rendered = self._render(doc)
            chosen = [e for i, e in enumerate(examples) if not (same_split and pool[i] is doc)]
            prompt = "".join(
                f"{e.text}{target_delimiter}{e.answer_text}{fewshot_delimiter}"
                for e in chosen[:shots]
            )
            row: dict[str, Any] = {"id": str(item), "prompt": self._description(doc) + prompt}
            row["prompt"] += rendered.text
            if rendered.choices is not None and self.output_type == "multiple_choice":
                row["choices"] = rendered.choices
                row["target"] = rendered.target
            else:
                row["target"] = rendered.answer_text
            rows.append(row)
        return rows

    def _field(self, key: str, doc: _Doc, read: Any) -> Any:
        try:
            return read()
        except ValueError as error:
            raise self.config.error(key, f"{doc.source}: {error}") from None

    def _description(self, doc: _Doc) -> str:
        description = self.config.get("description", "")
        text = self._field("description", doc, lambda: resolve(description, doc.row))
        return str(text)

    def _render(self, doc: _Doc) -> _Rendered:
        """A row's prompt text, choices and target as lm-eval reads them."""
        config = self.config
        choice_spec = config.values.get("doc_to_choice")
        has_choices = choice_spec is not None
        text = self._field(
            "doc_to_text",
            doc,
            lambda: resolve(config.values["doc_to_text"], doc.row, numbers=has_choices),
        )
        if not isinstance(text, str):
            raise config.error(
                "doc_to_text",
                f"{doc.source}: gave {text!r}, not a text (tasks with one context per choice, "
                "such as winogrande, are not supported)",
            )
        target = self._field(
            "doc_to_target",
            doc,
            lambda: resolve(
                config.values["doc_to_target"], doc.row, numbers=has_choices, lists=True
            ),
        )
        if isinstance(target, list | tuple | Mapping) or target is None or isinstance(target, bool):
            raise config.error(
                "doc_to_target",
                f"{doc.source}: gave {target!r}; one right answer per row is supported",
            )
        if not has_choices:
            return _Rendered(text, None, str(target))
        choices = self._field("doc_to_choice", doc, lambda: resolve_choices(choice_spec, doc.row))
        if not all(isinstance(c, str | int | float) for c in choices):
            raise config.error("doc_to_choice", f"{doc.source}: choices must be texts")
        choices = [str(c) for c in choices]
        if not 2 <= len(choices) <= _MAX_CHOICES:
            raise config.error(
                "doc_to_choice",
                f"{doc.source}: {len(choices)} choices; a row needs 2 to {_MAX_CHOICES}",
            )
        if isinstance(target, str):
            if target not in choices:
                raise config.error(
                    "doc_to_target",
                    f"{doc.source}: {target!r} is not one of the choices {choices}",
                )
            target = choices.index(target)
        if not isinstance(target, int) or not 0 <= target < len(choices):
            raise config.error(
                "doc_to_target",
                f"{doc.source}: {target!r} is not an index of the {len(choices)} choices",
            )
        return _Rendered(text, choices, target)


def _read_json(path: Path) -> list[_Doc]:
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
    return [_Doc(source, item) for source, item in numbered]


def _read_csv(path: Path) -> list[_Doc]:
    """The rows of a CSV file with a header, numbers read as numbers (as `datasets` does)."""
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError) as error:
        raise QuestionFileError(f"{path}: cannot read as CSV: {error}") from None
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return [
        _Doc(f"{path}:{index + 2}", {str(k): v for k, v in row.items()})
        for index, row in enumerate(records)
    ]
