"""Words, sentences, stable hashes, and a deterministic GPT-style stand-in tokenizer
(joining the tokens gives the text back)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each either else ever few for from further get got had
    hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
    himself his how how's however i i'd i'll i'm i've if in into is isn't it it's its itself
    just let's like make me more most much must mustn't my myself need no nor not now of off on
    once only or other ought our ours ourselves out over own please quite rather really same
    say shall shan't she she'd she'll she's should shouldn't so some such tell than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've thing things think this those though through to too under until up upon
    us very want was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's whether which while who who's whom why why's will with won't would wouldn't
    yes you you'd you'll you're you've your yours yourself yourselves hey hi hello one two
    three many lot lots kind sort way ways something anything everything someone anyone
    everyone know feel going gonna wanna do done doing etc answer question respond reply
    word words number single only just""".split()  # noqa: SIM905
)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """The words of `text` that carry meaning (no stopwords, at least three letters), unique."""
    seen: dict[str, None] = {}
    for word in words(text):
        word = word.strip("'-")
        if len(word) >= 3 and word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)


def sentences(text: str) -> list[str]:
    """The sentences of `text` (split after ``.!?`` and at line breaks), stripped, non-empty."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def content_text(content: Any) -> str:
    """A message content's text: the string, or its parts' texts joined."""
    if isinstance(content, list):
        parts = (part.get("text") for part in content if isinstance(part, Mapping))
        return "".join(part for part in parts if isinstance(part, str))
    return content if isinstance(content, str) else ""


def stable_hash(*parts: object) -> int:
    """A 32-bit hash of `parts` that is the same in every process (unlike ``hash``)."""
    return zlib.crc32("\x1f".join(map(str, parts)).encode("utf-8", "surrogatepass"))


def stable_unit(*parts: object) -> float:
    """A stable value in [0, 1) for `parts`: a draw that is the same in every process."""
    return (stable_hash(*parts) % 10007) / 10007.0


_TOKEN = re.compile(r"'(?:[sdmt]|ll|ve|re)\b| ?[^\W\d_]+| ?\d{1,3}| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")


def split_tokens(text: str) -> list[str]:
    """The tokens of `text`, in order; ``"".join(split_tokens(t)) == t``."""
    return _TOKEN.findall(text)


_WORD_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t\r"


def truncate_tokens(text: str, limit: int) -> tuple[list[str], bool]:
    """The first `limit` tokens of `text` (tokenizing only a prefix), and whether it was cut."""
    prefix = text[: limit * 12]
    tokens = _TOKEN.findall(prefix)
    if len(tokens) <= limit and len(prefix) < len(text):
        tokens = _TOKEN.findall(text)
    if len(tokens) > limit:
        return tokens[:limit], True
    return tokens, False


def count_tokens(text: str) -> int:
    """A cheap estimate of `split_tokens` length: words plus bytes that are not a letter, digit
    or space."""
    if not text:
        return 0
    others = text.encode("utf-8", "surrogatepass").translate(None, _WORD_BYTES)
    return max(1, len(text.split()) + len(others))


@lru_cache(maxsize=16384)
def token_bytes(token: str) -> tuple[int, ...]:
    return tuple(token.encode("utf-8"))
