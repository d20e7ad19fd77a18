"""lm-evaluation-harness task files as questions (docs/design/lm-eval.md): a task over local
data becomes one `multiple_choice` or exact-match `free_form` question whose inline dataset
holds each row rendered (`id`, `prompt`, `choices`/`target`)."""

from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment

from evals.errors import QuestionFileError
from evals.questions._lm_eval_config import (
    Doc,
    TaskConfig,
    check_keys,
    data_splits,
    evaluated_split,
    is_task_node,
    read_task_config,
    split_docs,
)

__all__ = ["is_task_node", "lm_eval_questions"]

_METRICS = {"multiple_choice": {"acc", "acc_norm"}, "generate_until": {"exact_match"}}
_EXACT_MATCH_OPTIONS = {"ignore_case", "ignore_punctuation", "ignore_numbers", "regexes_to_ignore"}
_EDGE_WHITESPACE = {"^\\s+", "\\s+$", "^\\s*", "\\s*$", "^ ", " $"}  # labmgr always trims
_GENERATION_KEYS = {"until", "do_sample", "temperature", "max_gen_toks", "top_p"}
_MAX_STOP = 4  # OpenAI's chat API takes at most four stop sequences
_MAX_CHOICES = 26  # one letter each


def lm_eval_questions(path: str | Path) -> list[dict[str, Any]]:
    """The questions (`Question.create` options) an lm-eval task file becomes;
    QuestionFileError naming the file, line and key for what cannot be run."""
    path = Path(path)
    if not path.is_file():
        raise QuestionFileError(f"{path}: no such file")
    config = read_task_config(path)
    if "task" not in config.values:
        raise QuestionFileError(f"{path}: not an lm-evaluation-harness task file (no 'task')")
    name = config.get("task")
    if not isinstance(name, str) or not name:
        raise config.error(
            "task", "a task name is needed (a list of tasks is a group file; pass each task file)"
        )
    check_keys(config)
    output_type = config.get("output_type", "generate_until")
    if output_type not in _METRICS:
        raise config.error(
            "output_type",
            f"{output_type!r} is not supported; labmgr asks chat models, so it runs "
            "multiple_choice and generate_until (no loglikelihood of a given text)",
        )
    for key in ("doc_to_text", "doc_to_target"):
        if config.values.get(key) is None:
            raise config.error(key, "is required")
    if output_type == "multiple_choice" and config.values.get("doc_to_choice") is None:
        raise config.error("output_type", "multiple_choice needs doc_to_choice")
    scoring = _scoring(config, output_type)
    splits = data_splits(config)
    key, split = evaluated_split(config)
    docs = split_docs(config, splits, key, split)
    rows = _rows(config, output_type, docs, _fewshot(config, splits, split, docs))
    asked = {"name": name, "dataset": rows, "paraphrases": ["{prompt}"], "target": "{target}"}
    if output_type == "multiple_choice":
        mc = {"choices": "{choices}", "score": "sampled", "temperature": 0}
        return [{"type": "multiple_choice", **asked, **mc}]
    generation = _generation(config)
    return [{"type": "free_form", **asked, "scorer": "exact_match", **scoring, **generation}]


@dataclass
class _Rendered:
    text: str
    choices: list[str] | None
    target: int | str  # the right choice's index, or the expected answer

    @property
    def answer_text(self) -> str:
        if self.choices is not None and isinstance(self.target, int):
            return self.choices[self.target]
        return str(self.target)


def _scoring(config: TaskConfig, output_type: str) -> dict[str, Any]:
    """The scorer options of `metric_list`, each metric checked against the output type."""
    metrics = config.get("metric_list", [])
    if not isinstance(metrics, list):
        raise config.error("metric_list", "expected a list of {metric: NAME, …} entries")
    known = _METRICS[output_type]
    options: dict[str, Any] = {"ignore_case": False, "ignore_punctuation": False}
    for index, entry in enumerate(metrics):
        key = f"metric_list[{index}]"
        name = entry.get("metric") if isinstance(entry, Mapping) else entry
        if not isinstance(name, str) or name not in known:
            raise config.error(
                key,
                f"metric {name!r} is not supported for {output_type}; labmgr scores "
                f"{' and '.join(sorted(known))} (the accuracy, column 'correct')",
            )
        for option, value in entry.items() if isinstance(entry, Mapping) else ():
            if option == "aggregation" and value != "mean":
                raise config.error(f"{key}.aggregation", "only mean is supported")
            elif option == "higher_is_better" and value is not True:
                raise config.error(f"{key}.higher_is_better", "accuracy is higher-better")
            elif option in _EXACT_MATCH_OPTIONS and name == "exact_match":
                options.update(_exact_match_option(config, f"{key}.{option}", option, value))
            elif option not in ("metric", "aggregation", "higher_is_better"):
                raise config.error(f"{key}.{option}", f"not an option of {name}")
    return options if output_type == "generate_until" else {}


def _exact_match_option(config: TaskConfig, key: str, option: str, value: Any) -> dict[str, Any]:
    if option in ("ignore_case", "ignore_punctuation"):
        if not isinstance(value, bool):
            raise config.error(key, "expected true or false")
        return {option: value}
    if option == "ignore_numbers":
        if value:
            raise config.error(key, "ignoring digits is not supported; remove it")
        return {}
    for pattern in value if isinstance(value, list) else [value]:
        if pattern not in _EDGE_WHITESPACE:
            raise config.error(
                key,
                f"the pattern {pattern!r} cannot be removed from answers in labmgr, which "
                "compares after ignore_case and ignore_punctuation (and always trims "
                "whitespace and reads runs of it as one space); remove it or use those",
            )
    return {}


def _generation(config: TaskConfig) -> dict[str, Any]:
    """`generation_kwargs` as request options: greedy unless `do_sample: true`."""
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
    sampled = kwargs.get("do_sample") is True
    options: dict[str, Any] = {
        "max_tokens": kwargs.get("max_gen_toks", 256),
        "temperature": kwargs.get("temperature", 1.0) if sampled else 0,
    }
    if "top_p" in kwargs and sampled:
        options["top_p"] = kwargs["top_p"]
    if stops:
        options["stop"] = stops
    return options


def _fewshot(
    config: TaskConfig, splits: dict[str, list[Path]], evaluated: str, docs: list[Doc]
) -> tuple[int, list[Doc], bool]:
    """How many examples each prompt shows, their rows, and whether those are the
    evaluated rows (a row is never its own example)."""
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
        pool = docs if same else split_docs(config, splits, key, str(split))
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
    config: TaskConfig, output_type: str, docs: list[Doc], fewshot: tuple[int, list[Doc], bool]
) -> list[dict[str, Any]]:
    shots, pool, same_split = fewshot
    ids: list[Any] = [doc.row.get("id") for doc in docs]
    own_ids = all(isinstance(i, str | int) and not isinstance(i, bool) for i in ids)
    if not own_ids or len({str(i) for i in ids}) != len(ids):
        ids = list(range(len(docs)))
    examples = [_render(config, doc) for doc in pool]
    target_delimiter = config.values.get("target_delimiter", " ")
    fewshot_delimiter = config.values.get("fewshot_delimiter", "\n\n")
    rows = []
    for doc, item in zip(docs, ids, strict=True):
        rendered = _render(config, doc)
        chosen = [e for i, e in enumerate(examples) if not (same_split and pool[i] is doc)]
        prompt = "".join(
            f"{e.text}{target_delimiter}{e.answer_text}{fewshot_delimiter}" for e in chosen[:shots]
        )
        description = _field(config, "description", doc)
        row: dict[str, Any] = {"id": str(item), "prompt": f"{description}{prompt}{rendered.text}"}
        if rendered.choices is not None and output_type == "multiple_choice":
            row["choices"] = rendered.choices
            row["target"] = rendered.target
        else:
            row["target"] = rendered.answer_text
        rows.append(row)
    return rows


def _field(
    config: TaskConfig, key: str, doc: Doc, read: Callable[..., Any] | None = None, **how: bool
) -> Any:
    """`read(the key's value, doc.row, **how)` (default `resolve`), a ValueError named by
    the key and the row."""
    try:
        return (read or resolve)(config.get(key, ""), doc.row, **how)
    except ValueError as error:
        raise config.error(key, f"{doc.source}: {error}") from None


def _render(config: TaskConfig, doc: Doc) -> _Rendered:
    def wrong(key: str, message: str) -> QuestionFileError:
        return config.error(key, f"{doc.source}: {message}")

    has_choices = config.values.get("doc_to_choice") is not None
    text = _field(config, "doc_to_text", doc, numbers=has_choices)
    if not isinstance(text, str):
        raise wrong(
            "doc_to_text",
            f"gave {text!r}, not a text (tasks with one context per choice, such as "
            "winogrande, are not supported)",
        )
    target = _field(config, "doc_to_target", doc, numbers=has_choices, lists=True)
    if isinstance(target, list | tuple | Mapping) or target is None or isinstance(target, bool):
        raise wrong("doc_to_target", f"gave {target!r}; one right answer per row is supported")
    if not has_choices:
        return _Rendered(text, None, str(target))
    choices = _field(config, "doc_to_choice", doc, resolve_choices)
    if not all(isinstance(c, str | int | float) for c in choices):
        raise wrong("doc_to_choice", "choices must be texts")
    choices = [str(c) for c in choices]
    if not 2 <= len(choices) <= _MAX_CHOICES:
        raise wrong("doc_to_choice", f"{len(choices)} choices; a row needs 2 to {_MAX_CHOICES}")
    if isinstance(target, str):
        if target not in choices:
            raise wrong("doc_to_target", f"{target!r} is not one of the choices {choices}")
        target = choices.index(target)
    if not isinstance(target, int) or not 0 <= target < len(choices):
        raise wrong("doc_to_target", f"{target!r} is not an index of the {len(choices)} choices")
    return _Rendered(text, choices, target)


# lm-eval's document fields: a column name, a Jinja template or a constant, resolved for one
# row; templates render in Jinja's immutable sandbox, undefined names being errors.


_MAX_POWER_BITS = 10_000


class _TaskTemplates(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with `*` and `**` bounded as its `range` is: a template
    builds no text or list longer than `MAX_RANGE` and no power of more than
    `_MAX_POWER_BITS` bits (`{{ 'x' * 10**10 }}` would exhaust memory, `{{ 9**9**9 }}` time)."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for items, times in ((left, right), (right, left)):
                sized = isinstance(items, str | list | tuple) and isinstance(times, int)
                if sized and len(items) * times > MAX_RANGE:
                    raise SecurityError(f"a repetition longer than {MAX_RANGE} is not allowed")
        else:  # a power's bits: about exponent × log2(base), for whole numbers
            whole = isinstance(left, int) and isinstance(right, int) and abs(left) >= 2
            if whole and right >= 1 and right * math.log2(abs(left)) > _MAX_POWER_BITS:
                raise SecurityError(f"a power of more than {_MAX_POWER_BITS} bits is not allowed")
        return super().call_binop(context, operator, left, right)


_ENVIRONMENT = _TaskTemplates(undefined=StrictUndefined, keep_trailing_newline=True)
_ENVIRONMENT.filters["regex_replace"] = lambda text, pattern, replacement, count=0: re.sub(
    pattern, replacement, text, count=count
)


@functools.lru_cache(maxsize=64)  # one template renders every row of a task
def _template(source: str) -> Template:
    return _ENVIRONMENT.from_string(source)


def render(source: str, row: Mapping[str, Any]) -> str:
    """`source` rendered with the row's columns as variables; ValueError saying why not."""
    try:
        return _template(source).render(**row)
    except TemplateError as error:
        raise ValueError(f"the Jinja template {source!r} cannot be rendered: {error}") from None


def resolve(
    spec: Any, row: Mapping[str, Any], *, numbers: bool = False, lists: bool = False
) -> Any:
    """A field of a row as lm-eval reads it: a column's value when `spec` names a column, a
    rendered template otherwise (all digits read as an index when `numbers`, `[…]` read as a
    list when `lists`), a constant when `spec` is not text."""
    if not isinstance(spec, str):
        return spec
    if spec in row:
        return row[spec]
    text = render(spec, row)
    if numbers and text.isdigit():
        return int(text)
    if lists and len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        try:
            return _literal(text)
        except ValueError:
            return text
    return text


def resolve_choices(spec: Any, row: Mapping[str, Any]) -> list[Any]:
    """`doc_to_choice` of a row: a column holding a list, a template rendering a list
    (`{{choices.text}}`), a fixed list, or a mapping whose values are the choices."""
    if isinstance(spec, Mapping):
        value: Any = list(spec.values())
    elif isinstance(spec, str) and spec not in row:
        value = _literal(render(spec, row))
    else:
        value = resolve(spec, row)
    if not isinstance(value, list | tuple):
        raise ValueError(f"gave {value!r}, not a list of choices")
    return list(value)


def _literal(text: str) -> Any:
    """A Python literal written as text; literals only, nothing is run."""
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"rendered {text[:80]!r}, not a Python list") from None
