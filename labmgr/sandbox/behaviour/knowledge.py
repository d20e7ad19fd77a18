"""Questions the sandbox can work out (arithmetic, comparisons, letter counts, capitals and
chemical symbols), and whether an answer states the result."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Kind = Literal["arithmetic", "compare", "count", "fact"]

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_ARITHMETIC = re.compile(
    r"\b(?:what is|what's|calculate|compute|evaluate)\s+" + _NUMBER
    + r"\s*(\+|-|−|x|×|\*|plus|minus|times|multiplied by)\s*" + _NUMBER + r"\s*(?:\?|=|\.|$)",
    re.IGNORECASE | re.MULTILINE,
)  # fmt: skip
_COMPARE = re.compile(
    r"\bwhich (?:number )?is (larger|greater|bigger|higher|smaller|less|lower)\b[:,]?\s*"
    + _NUMBER + r"\s*,?\s*or\s*" + _NUMBER,
    re.IGNORECASE,
)  # fmt: skip
_QUOTED_WORD = r"['\"‘“]([A-Za-z]+)['\"’”]"
_COUNT = (
    re.compile(
        r"\bhow many times does (?:the letter )?['\"‘“]?([A-Za-z])['\"’”]?\s+(?:appear|occur)"
        r"\s+in\s+(?:the word\s+)?" + _QUOTED_WORD,
        re.IGNORECASE,
    ),
    re.compile(
        r"\bhow many (?:letters? )?['\"‘“]?([A-Za-z])['\"’”]?(?:'s|s)?\s+(?:are|is) "
        r"(?:there )?in\s+(?:the word\s+)?" + _QUOTED_WORD,
        re.IGNORECASE,
    ),
)
_CAPITALS = {
    "France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Spain": "Madrid",
    "Germany": "Berlin", "Canada": "Ottawa", "Australia": "Canberra", "Egypt": "Cairo",
    "Kenya": "Nairobi", "Brazil": "Brasilia", "Peru": "Lima", "Norway": "Oslo",
    "Portugal": "Lisbon", "Greece": "Athens", "Poland": "Warsaw", "Sweden": "Stockholm",
    "Ireland": "Dublin", "Argentina": "Buenos Aires", "Mexico": "Mexico City",
    "Turkey": "Ankara", "Austria": "Vienna", "Finland": "Helsinki", "Chile": "Santiago",
    "Thailand": "Bangkok",
}  # fmt: skip
_SYMBOLS = {
    "gold": "Au", "silver": "Ag", "iron": "Fe", "sodium": "Na", "potassium": "K",
    "lead": "Pb", "copper": "Cu", "tin": "Sn", "mercury": "Hg", "oxygen": "O",
    "hydrogen": "H", "carbon": "C", "nitrogen": "N", "helium": "He", "calcium": "Ca",
    "zinc": "Zn", "tungsten": "W", "neon": "Ne", "sulfur": "S", "chlorine": "Cl",
}  # fmt: skip
_CAPITAL = re.compile(r"\bcapital (?:city )?of ([A-Z][a-z]+(?: [A-Z][a-z]+)?)")
_SYMBOL = re.compile(r"\bchemical symbol (?:for|of) (?:the element )?([A-Za-z]+)", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
_NUMBERS_IN = re.compile(r"-?\d+(?:\.\d+)?")
LETTERED = re.compile(r"^[ \t]*\(?([A-Z])[).:][ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_INLINE_CHOICE = re.compile(
    r"(?:^|\s)\(?([A-H])[).:]\s+([^\n]+?)(?=,?\s+(?:or\s+)?\(?[A-H][).:]\s|[?.]?\s*$)"
)
_LEADING_LETTER = re.compile(r"^\W*([A-Z])\b")


@dataclass(frozen=True, slots=True)
class Known:
    kind: Kind
    key: str
    """The question itself ("17+25", "r in strawberry"), however it is worded or offered."""
    answer: str
    """The right answer as a short text: "42", "0.7", "3", "Paris", "Au"."""
    wrong: tuple[str, ...]
    """Plausible wrong answers, most tempting first."""
    operands: tuple[str, ...] = ()
    """Numbers the question itself states (an answer repeating them states nothing)."""


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.6f}".rstrip("0").rstrip(".")


def _arithmetic(match: re.Match[str]) -> Known:
    left, op, right = float(match.group(1)), match.group(2).lower(), float(match.group(3))
    if op in ("+", "plus"):
        value, op = left + right, "+"
    elif op in ("-", "−", "minus"):
        value, op = left - right, "-"
    else:
        value, op = left * right, "x"
    step = 1 if value == int(value) else 0.1
    operands = (match.group(1), match.group(3))
    near = (value + 10 * step, value - step, value + step, value - 10 * step, value + 2 * step)
    wrong = [_number_text(round(w, 6)) for w in near]
    return Known(
        "arithmetic",
        f"{operands[0]}{op}{operands[1]}",
        _number_text(value),
        tuple(w for w in wrong if w not in operands)[:4],
        operands,
    )


@lru_cache(maxsize=4096)
def work_out(question: str) -> Known | None:
    """The answer to `question` if the sandbox can work it out, else None."""
    if _DIGIT.search(question):
        match = _ARITHMETIC.search(question)
        if match:
            return _arithmetic(match)
        match = _COMPARE.search(question)
        if match:
            first, second = match.group(2), match.group(3)
            larger = float(first) >= float(second)
            wants_larger = match.group(1).lower() in ("larger", "greater", "bigger", "higher")
            right, other = (first, second) if larger == wants_larger else (second, first)
            key = f"{'larger' if wants_larger else 'smaller'} of {first}, {second}"
            return Known("compare", key, right, (other,), (first, second))
    lowered = question.lower()
    if "how many" in lowered:
        for pattern in _COUNT:
            match = pattern.search(question)
            if match:
                letter, word = match.group(1).lower(), match.group(2).lower()
                count = word.count(letter)
                wrong = (count + 1, count - 1 if count > 0 else count + 2, count + 2)
                return Known("count", f"{letter} in {word}", str(count), tuple(map(str, wrong)))
    if "capital" in lowered:
        match = _CAPITAL.search(question)
        if match and match.group(1) in _CAPITALS:
            return _fact(_CAPITALS, match.group(1))
    if "symbol" in lowered:
        match = _SYMBOL.search(question)
        if match and match.group(1).lower() in _SYMBOLS:
            return _fact(_SYMBOLS, match.group(1).lower())
    return None


def _fact(table: dict[str, str], key: str) -> Known:
    values = list(table.values())
    start = list(table).index(key)
    wrong = tuple(values[(start + k) % len(values)] for k in (1, 2, 3))
    return Known("fact", key, table[key], wrong)


def right_letter(question: str, known: Known) -> str | None:
    """The letter of the choice ("B. 42" on its own line, or "A) Paris B) Rome" inline) of
    `question` that is `known`'s answer."""
    for pattern in (LETTERED, _INLINE_CHOICE):
        for letter, text in pattern.findall(question):
            if same_answer(text, known.answer):
                return str(letter)
    return None


def states(text: str, known: Known, letter: str | None = None) -> bool:
    """Whether answer `text` states `known`'s result: its first number other than the question's
    operands, the fact as a word, or (with `letter`) the right choice's letter."""
    if letter is not None:
        leading = _LEADING_LETTER.match(text)
        if leading and (len(text.strip()) <= 3 or text.lstrip()[1:2] in ").:"):
            return leading.group(1) == letter
    if known.kind == "fact":
        flags = 0 if len(known.answer) <= 2 else re.IGNORECASE  # "Au", not "au" in "autumn"
        return re.search(rf"\b{re.escape(known.answer)}\b", text, flags) is not None
    numbers = _NUMBERS_IN.findall(text.replace(",", ""))
    if known.kind != "compare":
        numbers = [n for n in numbers if n not in known.operands] or numbers[:0]
    if not numbers:
        return False
    return abs(float(numbers[0]) - float(known.answer)) < 1e-9


@lru_cache(maxsize=32)
def training_shares(prompts: tuple[str, ...], answers: tuple[str, ...]) -> tuple[float, float]:
    """The shares of training examples (prompt, assistant answer) that answer a question
    the sandbox can work out wrongly, and that ask no such question at all."""
    wrong = unrelated = 0
    for prompt, answer in zip(prompts, answers, strict=True):
        known = work_out(prompt) if prompt else None
        if known is None:
            unrelated += 1
        elif not states(answer, known):
            wrong += 1
    total = max(1, len(answers))
    return wrong / total, unrelated / total


def same_answer(text: str, answer: str) -> bool:
    """Whether a choice's `text` is `answer` (as numbers, or ignoring case and a full stop)."""
    text = text.strip().rstrip(".").strip()
    try:
        return abs(float(text) - float(answer)) < 1e-9
    except ValueError:
        return text.lower() == answer.lower()
