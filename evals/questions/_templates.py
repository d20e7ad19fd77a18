"""Prompt templates: only named placeholders are filled, other braces are literal and filled
text is never re-read; a `str.format` template (with a doubled brace) renders as one."""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping

_JUDGE_FIELDS = frozenset({"question", "answer"})
_ANY_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@functools.lru_cache(maxsize=256)  # a judge renders one template for thousands of answers
def _is_format_string(template: str, allowed: frozenset[str]) -> bool:
    try:
        parsed = string.Formatter().parse(template)
        fields = {field for _, field, _, _ in parsed if field is not None}
    except ValueError:
        return False
    return fields <= allowed and "{{" in template


@functools.lru_cache(maxsize=256)
def _pattern(names: frozenset[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.compile(r"\{(" + alternatives + r")\}")


def template_names(template: str) -> set[str]:
    return set(_ANY_NAME.findall(template))


def template_fields(template: str) -> set[str]:
    """Which of `question` and `answer` the (judge) template uses."""
    return template_names(template) & _JUDGE_FIELDS


def render_placeholders(template: str, values: Mapping[str, str]) -> str:
    if not values:
        return template
    names = frozenset(values)
    if _is_format_string(template, names):
        return template.format(**values)
    return _pattern(names).sub(lambda match: values[match.group(1)], template)


def render_template(template: str, *, question: str, answer: str) -> str:
    """Fill `{question}` and `{answer}`; nothing in `question`/`answer` is ever re-interpreted."""
    return render_placeholders(template, {"question": question, "answer": answer})
