"""A fast, deterministic stand-in for a BPE tokenizer (no vocabulary download, no network).

Text is split GPT-style: words and numbers (up to three digits) carry their leading space,
punctuation runs are their own tokens, and whitespace is kept, so joining the pieces gives the
text back exactly. Counts land close to OpenAI's tokenizers for English prose.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["count_tokens", "split_tokens", "token_bytes", "truncate_tokens"]

_TOKEN = re.compile(r"'(?:[sdmt]|ll|ve|re)\b| ?[^\W\d_]+| ?\d{1,3}| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")


def split_tokens(text: str) -> list[str]:
    """The tokens of `text`, in order; ``"".join(split_tokens(t)) == t``."""
    return _TOKEN.findall(text)


_WORD_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t\r"


def truncate_tokens(text: str, limit: int) -> tuple[list[str], bool]:
    """The first `limit` tokens of `text`, and whether anything was cut.

    Only a prefix of the text is tokenized (tokens are rarely longer than 12 characters),
    so the cost follows `limit`, not the length of the text.
    """
    prefix = text[: limit * 12]
    tokens = _TOKEN.findall(prefix)
    if len(tokens) <= limit and len(prefix) < len(text):
        tokens = _TOKEN.findall(text)
    if len(tokens) > limit:
        return tokens[:limit], True
    return tokens, False


def count_tokens(text: str) -> int:
    """An estimate of the number of tokens in `text` (0 for the empty string).

    Whitespace-separated words plus every other byte that is not a letter, digit or space
    (punctuation, line breaks, non-ASCII bytes): close to `split_tokens` on prose, and
    cheap enough to run on every prompt (no token list is built).
    """
    if not text:
        return 0
    others = text.encode("utf-8", "surrogatepass").translate(None, _WORD_BYTES)
    return max(1, len(text.split()) + len(others))


@lru_cache(maxsize=16384)
def token_bytes(token: str) -> tuple[int, ...]:
    """The UTF-8 bytes of a token (cached: the same tokens recur in every response)."""
    return tuple(token.encode("utf-8"))
