"""lm-eval's document fields (a column name, a Jinja template or a constant) resolved for one
row; templates render in Jinja's immutable sandbox, undefined names being errors."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


def _regex_replace(text: str, pattern: str, replacement: str, count: int = 0) -> str:
    return re.sub(pattern, replacement, text, count=count)


_ENVIRONMENT = ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)
_ENVIRONMENT.filters["regex_replace"] = _regex_replace


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
