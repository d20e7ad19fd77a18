"""Judge prompt templates: `{question}` and `{answer}` are the only placeholders.

Any other brace is literal, so `Reply with {"score": N}` works as written. Templates written
for `str.format` (literal braces doubled, `{{"score": N}}`) keep working: when a template is a
valid format string whose only fields are `question`/`answer`, it is rendered with
`str.format`; otherwise only the two placeholders are substituted.
"""

from __future__ import annotations

import functools
import re
import string

__all__ = ["render_template", "template_fields"]

_PLACEHOLDER = re.compile(r"\{(question|answer)\}")
_ALLOWED = frozenset({"question", "answer"})


def _format_fields(template: str) -> set[str] | None:
    """The field names of `template` as a format string, or None if it is not one."""
    try:
        return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError:
        return None


@functools.lru_cache(maxsize=256)  # a judge renders one template for thousands of answers
def _is_format_string(template: str) -> bool:
    fields = _format_fields(template)
    return fields is not None and fields <= _ALLOWED and "{{" in template


def template_fields(template: str) -> set[str]:
    """Which of `question` and `answer` the template uses."""
    return set(_PLACEHOLDER.findall(template))


def render_template(template: str, *, question: str, answer: str) -> str:
    """Fill `{question}` and `{answer}`; nothing in `question`/`answer` is ever re-interpreted."""
    if _is_format_string(template):
        return template.format(question=question, answer=answer)
    values = {"question": question, "answer": answer}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)
