"""Spreadsheet-safe cells: an answer starting with `=`, `+`, `-`, `@`, a tab or a carriage
return would be read as a formula (CSV injection), so it is written with one `'` in front.
The rule is reversible because text already quoted before such a character gets one more
quote, and `restore` removes exactly one.
"""

from __future__ import annotations

import re

_NEEDS_QUOTE = re.compile(r"'*[=+\-@\t\r]")
_QUOTED = re.compile(r"'+[=+\-@\t\r]")


def neutralise(text: str) -> str:
    """`text` as a cell no spreadsheet reads as a formula."""
    return "'" + text if _NEEDS_QUOTE.match(text) else text


def restore(text: str) -> str:
    """The text `neutralise` was given."""
    return text[1:] if _QUOTED.match(text) else text
