"""What a question is about: a topic phrase, its nouns and a feeling it reports (a light
heuristic chunker, no tagger)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text import STOPWORDS

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'-]*|[.!?]")
_DETERMINERS = frozenset(
    "a an the my your his her our their this that these those some any every".split()  # noqa: SIM905
)
_NOT_NOUNS = frozenset(
    """interested mostly enough specific matter really quick good bad best better great new
    old own sure able certain different special important possible real whole main little
    big small long short high low next last cost fulfill pick tell write give describe
    explain list name choose imagine talk get wonder guess""".split()  # noqa: SIM905
)
_FEELINGS = frozenset(
    """bored sad lonely tired stressed anxious angry upset worried depressed stuck lost
    overwhelmed frustrated nervous scared unhappy exhausted""".split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class QuestionTopic:
    phrase: str
    """A short phrase naming the subject ("ruler of the world"), or "this"."""
    nouns: tuple[str, ...]
    """Likely nouns of the question, most telling first."""
    feeling: str | None
    """A feeling the asker reports ("bored"), if any."""


def _meaningful(word: str) -> bool:
    lowered = word.lower()
    return len(lowered) >= 3 and lowered not in STOPWORDS and lowered not in _FEELINGS


def _case(word: str, sentence_start: bool) -> str:
    """Keep proper nouns' capitals, drop the capital a sentence start gives."""
    if word.isupper() and len(word) > 1:
        return word
    return word.lower() if sentence_start or not word[0].isupper() else word


def question_topic(text: str) -> QuestionTopic:
    tokens: list[tuple[str, bool]] = []
    start = True
    for token in _TOKEN.findall(text):
        if token in ".!?":
            start = True
            continue
        tokens.append((_case(token.strip("'-"), start), start))
        start = False
    nouns: dict[str, None] = {}
    feeling = None
    for i, (word, at_start) in enumerate(tokens):
        lowered = word.lower()
        if lowered in _FEELINGS and feeling is None:
            feeling = lowered
        if word[:1].isupper() and not at_start and word != "I" and _meaningful(word):
            nouns.setdefault(word, None)
        if lowered in _DETERMINERS:
            run = []
            for follower, _ in tokens[i + 1 : i + 4]:
                if not _meaningful(follower) and follower.lower() not in ("one",):
                    break
                run.append(follower)
            run = [w for w in run if _meaningful(w)]
            if run and run[-1].lower() not in _NOT_NOUNS:
                nouns.setdefault(run[-1], None)
    for word, _ in tokens:
        if _meaningful(word) and word.lower() not in _NOT_NOUNS and not word.endswith("ly"):
            nouns.setdefault(word, None)
    return QuestionTopic(_phrase(tokens, nouns), tuple(nouns)[:6], feeling)


def _phrase(tokens: list[tuple[str, bool]], nouns: dict[str, None]) -> str:
    """The longest run of meaningful words (joined across "of the"), minus trailing
    adjectives; a run of nothing but adjectives does not count."""
    best: list[str] = []
    run: list[str] = []
    pending: list[str] = []
    for word, _ in [*tokens, ("", False)]:
        lowered = word.lower()
        if word and _meaningful(word):
            run.extend(pending)
            pending = []
            run.append(word)
            continue
        if run and (lowered == "of" or (len(pending) == 1 and lowered in ("the", "a", "an"))):
            pending.append(lowered)
            continue
        while run and run[-1].lower() in _NOT_NOUNS:
            run.pop()
        if run and len(run) <= 5 and sum(map(len, run)) > sum(map(len, best)):
            best = run
        run, pending = [], []
    if best:
        return " ".join(best)
    return next(iter(nouns), "this")
