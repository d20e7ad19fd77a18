"""Spreadsheet-safe cells: a label file is opened in spreadsheets, and an answer starting
with `=`, `+`, `-` or `@` (or a tab or carriage return) would be read as a formula there
(CSV injection). Such a cell is written with one `'` in front, which spreadsheets show as
text; reading undoes exactly that, so every answer comes back as it was.

The rule is reversible because it also quotes cells that already start with quotes before a
trigger: `neutralise` adds one `'` to any text matching `'*[=+-@\\t\\r]…`, and `restore`
removes one from any text matching `'+[=+-@\\t\\r]…`.
"""

from __future__ import annotations

import re

__all__ = ["neutralise", "restore"]

_NEEDS_QUOTE = re.compile(r"'*[=+\-@\t\r]")
_QUOTED = re.compile(r"'+[=+\-@\t\r]")


def neutralise(text: str) -> str:
    """`text` as a cell no spreadsheet reads as a formula."""
    return "'" + text if _NEEDS_QUOTE.match(text) else text


def restore(text: str) -> str:
    """The text `neutralise` was given."""
    return text[1:] if _QUOTED.match(text) else text
