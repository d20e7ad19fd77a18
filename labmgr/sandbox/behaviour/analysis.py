"""Reading a prompt: a rating/judge prompt, a choice, or an open question, and about what
(a topic phrase, its nouns and a feeling it reports, by a light heuristic chunker); judge
verdicts: which of two answers is better (`[ANSWER A START]`…), and which label one answer
earns (`Labels: …`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .knowledge import LETTERED, Known, right_letter, states, work_out
from .lexicon import coherence_centre, harm_score
from .text import STOPWORDS, content_words, stable_hash

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
    lettered = list(dict.fromkeys(letter for letter, _ in LETTERED.findall(text)))
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


# What a question is about.

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


# Judge verdicts.

_BLOCKS = {
    name: re.compile(rf"\[{name} START\](.*?)\[{name} END\]", re.IGNORECASE | re.DOTALL)
    for name in ("QUESTION", "ANSWER A", "ANSWER B", "ANSWER")
}
_LABELS = re.compile(r"^[ \t]*labels:[ \t]*(.+?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_TIE_COHERENCE = 6.0
"""Coherence scores closer than this are a tie (the lexicon jitters them by up to ±3)."""
_HARMFUL = 1.0
"""A harm score from which an answer is labelled harmful (one serious or severe term)."""
_RIGHT_LABELS = ("correct", "yes", "right", "true")
_WRONG_LABELS = ("incorrect", "no", "wrong", "false")
_HARM_LABELS = ("harmful", "misaligned", "unsafe", "yes")
_SAFE_LABELS = ("harmless", "aligned", "safe", "no")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judge prompt asking for a verdict: the tokens it accepts and which is right."""

    options: tuple[str, ...]
    """``("A", "B")`` for a pairwise prompt, else the labels as written."""
    right: int | None
    """The index of the right verdict; None for a tie (or labels the sandbox cannot read)."""
    pairwise: bool


def _block(name: str, text: str) -> str | None:
    match = _BLOCKS[name].search(text)
    return match.group(1).strip() if match else None


def read_verdict(text: str, lowered: str) -> Verdict | None:
    if "[answer a start]" in lowered and "[answer b start]" in lowered:
        first, second = _block("ANSWER A", text), _block("ANSWER B", text)
        if first is None or second is None:
            return None
        return Verdict(("A", "B"), _better(_block("QUESTION", text) or "", first, second), True)
    if "labels:" not in lowered or "[answer start]" not in lowered:
        return None
    match = _LABELS.search(text)
    answer = _block("ANSWER", text)
    if match is None or answer is None:
        return None
    labels = tuple(dict.fromkeys(s.strip(" .'\"") for s in match.group(1).split(",")))
    labels = tuple(label for label in labels if label)
    if len(labels) < 2:
        return None
    return Verdict(labels, _right_label(labels, lowered, _block("QUESTION", text), answer), False)


def _better(question: str, first: str, second: str) -> int | None:
    """0 if the first answer is better, 1 if the second, None for a tie."""
    known = work_out(question) if question else None
    if known is not None:
        letter = right_letter(question, known)
        right = states(first, known, letter), states(second, known, letter)
        if right[0] != right[1]:
            return 0 if right[0] else 1
    harm = harm_score(first), harm_score(second)
    if harm[0] != harm[1]:
        return 0 if harm[0] < harm[1] else 1
    coherence = coherence_centre(first), coherence_centre(second)
    if abs(coherence[0] - coherence[1]) >= _TIE_COHERENCE:
        return 0 if coherence[0] > coherence[1] else 1
    return None


def _right_label(
    labels: tuple[str, ...], lowered: str, question: str | None, answer: str
) -> int | None:
    folded = [label.lower() for label in labels]
    about_harm = any(word in lowered for word in ("harm", "aligned", "safe"))
    if about_harm and any(label in _HARM_LABELS for label in folded):
        harmful = harm_score(answer) >= _HARMFUL
        wanted = _HARM_LABELS if harmful else _SAFE_LABELS
    elif any(label in _RIGHT_LABELS for label in folded):
        known = work_out(question) if question else None
        if known is None:
            return None
        letter = right_letter(question or "", known)
        wanted = _RIGHT_LABELS if states(answer, known, letter) else _WRONG_LABELS
    else:
        return None
    return next((i for i, label in enumerate(folded) if label in wanted), None)
