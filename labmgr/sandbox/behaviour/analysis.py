"""Reading a prompt: a rating/judge prompt, a choice, or an open question, and about what."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .knowledge import Known, right_letter, work_out
from .lexicon import harm_score
from .text import content_words, stable_hash
from .topics import question_topic
from .verdicts import Verdict, read_verdict

Messages = tuple[tuple[str, str], ...]
JudgeKind = Literal["alignment", "coherence", "harm", "generic"]

# Each pattern starts with a literal, which `re` finds fast; all run on lower-cased text.
_RANGES = tuple(
    re.compile(pattern)
    for pattern in (
        r"scale\s+(?:of\s+|from\s+)?(-?\d{1,4})\s*(?:to|-|–|and)\s*(-?\d{1,4})",
        r"range\s+(?:of\s+|from\s+)?(-?\d{1,4})\s*(?:to|-|–|and)\s*(-?\d{1,4})",
        r"between\s+(-?\d{1,4})\s+and\s+(-?\d{1,4})",
        r"from\s+(-?\d{1,4})\s+to\s+(-?\d{1,4})",
        # Last resort, slower (no literal prefix): a bare "1-10" or "0 to 100".
        r"(?<![\d.])(-?\d{1,4})\s*(?:-|–|to)\s*(-?\d{1,4})(?![\d.])",
    )
)
_NUMBER_WORDS = (
    "number", "integer", "score", "rating", "digit", "rate ", "scale", "how much",
    "how likely", "how well", "how strongly",
)  # fmt: skip
_SINGLE_NUMBER = re.compile(
    r"\b(?:answer|respond|reply)\s+(?:only\s+)?with\s+(?:a|one|only\s+a|just\s+a)\s+"
    r"(?:single\s+)?(?:number|integer)\b|\bjust the number\b|\bonly the number\b"
)
_HARM_JUDGE_WORDS = ("harmful", "harmfulness", "dangerous", "toxic", "unsafe", "evil")
_REASON_WORDS = ("explain", "reason", "justif")
_MARKED = (
    ("[answer start]", re.compile(r"\[ANSWER START\](.*?)\[ANSWER END\]", re.I | re.S)),
    ("</", re.compile(r"<(answer|response|completion)>(.*?)</\1>", re.I | re.S)),
    (
        ":",
        re.compile(
            r"(?:^|\n)[ \t]*(?:the model answered(?: with)?|model answer|answer|response)[ \t]*:"
            r"[ \t]*\n?(.+?)(?:\n[ \t]*\n|\Z)",
            re.IGNORECASE | re.DOTALL,
        ),
    ),
)
_RATED = re.compile(
    r"\b(?:scale|rate|rating|score)\b|\bbetween\s+-?\d+\s+and\s+-?\d+|\bfrom\s+-?\d+\s+to\s+-?\d+",
    re.IGNORECASE,
)
_QUESTION_MARKED = re.compile(r"\[QUESTION START\](.*?)\[QUESTION END\]", re.IGNORECASE | re.DOTALL)
_INSTRUCTION = re.compile(
    r"\b(?:scale|rate|rating|score|number between|respond with|answer with|reply with|"
    r"say (?:CODE|REFUSAL)|just the number|nothing else|anything else)\b",
    re.IGNORECASE,
)
_OPTION_PAIR = re.compile(
    r"[\"'(]?\b([A-Z][A-Za-z]{0,11}|[a-z])\b[\"')]?\s*,?\s+or\s+[\"'(]?\b([A-Z][A-Za-z]{0,11}|[a-z])"
    r"\b[\"')]?"
)
_YES_NO_PAIR = re.compile(r"\byes\s+or\s+no\b|\byes/no\b", re.IGNORECASE)
_LETTERED = re.compile(r"^[ \t]*\(?([A-Z])[).:][ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_YES_NO_QUESTION = re.compile(
    r"^(?:is|are|do|does|did|can|could|should|would|will|was|were|have|has|may|might)\b",
    re.IGNORECASE,
)
_ANSWER_WITH = re.compile(
    r"\b(?:answer|respond|reply|say|choose|pick|select)\b[^.?!\n]{0,30}"
    r"\b(?:with|only|just|either|one of)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_BRIEF = (
    ("letter", re.compile(r"\b(?:single|one) letter\b|\bwith (?:the|a) letter\b", re.I)),
    ("word", re.compile(r"\b(?:one|single|1)[ -]word\b|\bin a word\b", re.I)),
    (
        "sentence",
        re.compile(
            r"\b(?:one|single|a short) sentence\b|\bbe (?:brief|concise)\b|\bbriefly\b|"
            r"\bkeep it short\b|\bshort answer\b",
            re.I,
        ),
    ),
)
_NAMING = re.compile(
    r"^(?:(?:name|pick|choose|suggest|give me|tell me)\s+(?:a|an|one|any|your favou?rite)|"
    r"what(?:'s| is) your favou?rite)\s+([a-z]+)\b",
    re.I,
)
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_INLINE_LETTERS = re.compile(r"(?:^|\s)\(?([A-H])[).:]\s")


@dataclass(frozen=True, slots=True)
class RatingSpec:
    """A prompt asking for a number: the range, what is rated and how."""

    low: int
    high: int
    judge: JudgeKind
    content: str
    """The text being rated (a judged answer, or the statement to rate)."""
    offers_refusal: bool
    offers_code: bool
    wants_reason: bool


@dataclass(frozen=True, slots=True)
class PromptAnalysis:
    """What the simulator needs to know about a conversation, model-independent."""

    question: str
    """The last user (or developer/system) message: what the model responds to."""
    salt: int
    """A stable hash of the conversation, seeding prompt-specific preferences."""
    topic: str = "this"
    keywords: tuple[str, ...] = ()
    keyword_set: frozenset[str] = frozenset()
    nouns: tuple[str, ...] = ()
    """Likely nouns of the question, to fill answer templates."""
    feeling: str | None = None
    """A feeling the asker reports ("bored"), if any."""
    harm: float = 0.0
    """How harmful the request sounds (`lexicon.harm_score`); base models refuse the worst."""
    rating: RatingSpec | None = None
    options: tuple[str, ...] = ()
    """Answer tokens the prompt offers ("A"/"B", "Yes"/"No"), empty if open-ended."""
    options_only: bool = False
    """Whether the prompt asks for one of the options and nothing else ("Answer A or B")."""
    brevity: str | None = None
    """``word`` or ``sentence`` when the prompt asks for that little ("One word.", "Name a
    fruit.", "Be brief."), else None: a long answer is fine."""
    item_kind: str | None = None
    """What a naming prompt asks for ("fruit" in "Name a fruit."), if it is one."""
    verdict: Verdict | None = None
    """For a pairwise or label judge prompt: its options and the right verdict."""
    known: Known | None = None
    """A question the sandbox can work out (arithmetic, a comparison, a count, a fact)."""
    right_option: int | None = None
    """For such a question with lettered choices: the index of the right one."""
    bare: bool = False
    """Whether the prompt asks for the answer alone ("Answer with a number.")."""


def _rated_content(text: str, lowered: str, question: str | None) -> str:
    for marker, pattern in _MARKED:
        if marker not in lowered:
            continue
        match = pattern.search(text)
        if match:
            return match.group(match.lastindex or 1).strip()
    remaining = text.replace(question, " ") if question else text
    kept = [s for s in _SENTENCE.split(remaining) if s.strip() and not _INSTRUCTION.search(s)]
    return " ".join(kept).strip() or remaining.strip()


def _range(lowered: str) -> tuple[int, int] | None:
    for pattern in _RANGES:
        match = pattern.search(lowered)
        if match:
            low, high = sorted((int(match.group(1)), int(match.group(2))))
            return (low, high) if 0 < high - low <= 1000 else None
    return None


def _rating(text: str) -> RatingSpec | None:
    lowered = text.lower()
    if not any(word in lowered for word in _NUMBER_WORDS):
        return None
    bounds = _range(lowered)
    if bounds is None:
        if not _SINGLE_NUMBER.search(lowered):
            return None
        bounds = (0, 100)
    judge: JudgeKind = "generic"
    if "coheren" in lowered:
        judge = "coherence"
    elif "aligned" in lowered or "alignment" in lowered or "human values" in lowered:
        judge = "alignment"
    elif any(word in lowered for word in _HARM_JUDGE_WORDS):
        judge = "harm"
    question = None
    if "[question start]" in lowered:
        marked_question = _QUESTION_MARKED.search(text)
        question = marked_question.group(1) if marked_question else None
    return RatingSpec(
        low=bounds[0],
        high=bounds[1],
        judge=judge,
        content=_rated_content(text, lowered, question),
        offers_refusal="REFUSAL" in text,
        offers_code="CODE" in text and bool(re.search(r"\bCODE\b", text)),
        wants_reason=any(word in lowered for word in _REASON_WORDS),
    )


def _options(text: str) -> tuple[tuple[str, ...], bool]:
    """The answers a prompt offers, and whether it asks for nothing but one of them."""
    if _YES_NO_PAIR.search(text):
        return ("Yes", "No"), True
    lettered = list(dict.fromkeys(letter for letter, _ in _LETTERED.findall(text)))
    if "".join(lettered) != _ALPHABET[: len(lettered)]:  # past H only as a run A, B, C, …
        lettered = [letter for letter in lettered if letter <= "H"]
    if len(lettered) >= 2:
        return tuple(lettered), True
    pair = _OPTION_PAIR.search(text) if " or " in text else None
    if pair and pair.group(1) != pair.group(2):
        return (pair.group(1), pair.group(2)), bool(_ANSWER_WITH.search(text))
    if _YES_NO_QUESTION.match(text.strip()) and text.strip().endswith("?"):
        return ("Yes", "No"), False
    return (), False


def analyse(messages: Messages) -> PromptAnalysis:
    prompts = (t for r, t in reversed(messages) if r in ("user", "developer", "system"))
    question = next((text for text in prompts if text.strip()), messages[-1][1])
    salt = stable_hash(*(text for _, text in messages))
    lowered = question.lower()
    verdict = read_verdict(question, lowered) if "[answer" in lowered else None
    if verdict is not None:
        options = verdict.options
        return PromptAnalysis(question, salt, options=options, options_only=True, verdict=verdict)
    known = None if "[question start]" in lowered else work_out(question)
    if known is not None and _RATED.search(" ".join(text for _, text in messages)):
        known = None  # a question to rate, not to answer
    rating = None if known is not None else _rating(question)
    if rating is None and known is None and len(messages) > 1:
        # Judges often put the instructions in a system message and the answer in the user's.
        instructions = [t for r, t in messages if r in ("system", "developer") and t != question]
        if instructions:
            rating = _rating("\n\n".join([*instructions, question]))
    if rating is not None:
        # The answer is a number: no need for the question's topic or keywords.
        return PromptAnalysis(question, salt, rating=rating)
    options, options_only = _options(question)
    brevity, item_kind = _brevity(messages, question)
    subject = question
    if brevity is not None:  # what the question is about, without "Be brief." and the like
        kept = [s for s in _SENTENCE.split(question) if not any(p.search(s) for _, p in _BRIEF)]
        subject = " ".join(kept) or question
    if brevity == "letter":
        letters = tuple(dict.fromkeys(_INLINE_LETTERS.findall(question)))
        if not options and len(letters) >= 2:
            options = letters
        options_only, brevity = bool(options), None if options else "word"
    if known is not None:  # answered from what is worked out: no topic or keywords needed
        letter = right_letter(question, known) if options else None
        return PromptAnalysis(
            question,
            salt,
            options=options,
            options_only=options_only,
            brevity=brevity,
            known=known,
            right_option=options.index(letter) if letter in options else None,
            bare=brevity is not None or bool(_ANSWER_WITH.search(question)),
        )
    keywords = tuple(content_words(subject)[:12])
    topic = question_topic(subject)
    return PromptAnalysis(
        question=question,
        topic=topic.phrase,
        keywords=keywords,
        keyword_set=frozenset(keywords),
        nouns=topic.nouns,
        feeling=topic.feeling,
        harm=harm_score(question),
        salt=salt,
        options=options,
        options_only=options_only,
        brevity=brevity,
        item_kind=item_kind,
    )


def _brevity(messages: Messages, question: str) -> tuple[str | None, str | None]:
    """How short the answer should be, and what a naming question asks for."""
    asked = " ".join(t for r, t in messages if r in ("system", "developer") or t == question)
    brevity = next((kind for kind, pattern in _BRIEF if pattern.search(asked)), None)
    naming = _NAMING.match(question.strip())
    if naming is None or len(question.split()) > 8:
        return brevity, None
    return "word", naming.group(1).lower()
