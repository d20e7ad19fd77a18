"""Prompt templates: only named placeholders are filled, every other brace is literal.

A judge's template has `{question}` and `{answer}`; a grid's template has one placeholder per
factor (or per key of a factor's whole-text levels). Any other brace is literal, so
`Reply with {"score": N}` works as written. Templates written for `str.format` (literal braces
doubled, `{{"score": N}}`) keep working: when a template is a valid format string whose only
fields are the known names and it contains a doubled brace, it is rendered with `str.format`;
otherwise only the known placeholders are substituted. Substituted text is never re-read.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping

__all__ = ["render_placeholders", "render_template", "template_fields", "template_names"]

_JUDGE_FIELDS = frozenset({"question", "answer"})
_ANY_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _format_fields(template: str) -> set[str] | None:
    """The field names of `template` as a format string, or None if it is not one."""
    try:
        return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError:
        return None


@functools.lru_cache(maxsize=256)  # a judge renders one template for thousands of answers
def _is_format_string(template: str, allowed: frozenset[str]) -> bool:
    fields = _format_fields(template)
    return fields is not None and fields <= allowed and "{{" in template


@functools.lru_cache(maxsize=256)
def _pattern(names: frozenset[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.compile(r"\{(" + alternatives + r")\}")


def template_names(template: str) -> set[str]:
    """Every `{name}` in `template` that could be a placeholder (an identifier in braces)."""
    return set(_ANY_NAME.findall(template))


def template_fields(template: str) -> set[str]:
    """Which of `question` and `answer` the (judge) template uses."""
    return template_names(template) & _JUDGE_FIELDS


def render_placeholders(template: str, values: Mapping[str, str]) -> str:
    """Fill each `{name}` of `values`; other braces stay literal and nothing substituted is
    read again (see the module docstring for `str.format` templates)."""
    if not values:
        return template
    names = frozenset(values)
    if _is_format_string(template, names):
        return template.format(**values)
    return _pattern(names).sub(lambda match: values[match.group(1)], template)


def render_template(template: str, *, question: str, answer: str) -> str:
    """Fill `{question}` and `{answer}`; nothing in `question`/`answer` is ever re-interpreted."""
    return render_placeholders(template, {"question": question, "answer": answer})
