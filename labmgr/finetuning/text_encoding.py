"""Naming the encoding of a training file that is not UTF-8, from its bytes.

The fine-tuning API reads UTF-8 only. A file saved as UTF-16 (Windows editors, PowerShell's
``>``) fails on every line; one error naming the encoding says what happened instead.
"""

from __future__ import annotations

import codecs

__all__ = ["UTF8_BOM", "byte_order_mark", "guess_encoding", "looks_like_wide_text"]

UTF8_BOM = codecs.BOM_UTF8
"""The three bytes some editors put at the start of a UTF-8 file."""

_WIDE_BOMS = (  # longest first: the UTF-32-LE mark starts with the UTF-16-LE one
    (codecs.BOM_UTF32_LE, "UTF-32 (little-endian)"),
    (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)"),
    (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)"),
    (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)"),
)


def byte_order_mark(head: bytes) -> str | None:
    """The UTF-16 or UTF-32 encoding whose byte-order mark starts `head`, or None."""
    for mark, name in _WIDE_BOMS:
        if head.startswith(mark):
            return name
    return None


def looks_like_wide_text(line: bytes) -> str | None:
    """``UTF-16`` or ``UTF-32`` when a line without a byte-order mark holds the NUL bytes
    those encodings put between ASCII characters; None otherwise."""
    if b"\x00" not in line:
        return None
    return "UTF-32" if b"\x00\x00\x00" in line else "UTF-16"


def guess_encoding(line: bytes) -> str:
    """A likely name for the 8-bit encoding of a line that is not UTF-8."""
    try:
        line.decode("cp1252")
    except UnicodeDecodeError:
        return "an 8-bit encoding other than UTF-8"
    return "Windows-1252 or Latin-1"
