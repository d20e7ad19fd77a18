"""Small text utilities shared by the behaviours: words, sentences, stable hashes."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = ["STOPWORDS", "content_text", "content_words", "sentences", "stable_hash", "words"]

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
    """The words of `text`, lower-cased, punctuation and digits dropped."""
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
