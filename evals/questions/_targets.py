"""Right answers: comparing a free-form answer with its target (`exact_match`, `includes`,
`regex`, `numeric`), writing a multiple-choice prompt and reading its letter back."""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

Scorer = Literal["exact_match", "includes", "regex", "numeric"]

LETTERS = string.ascii_uppercase
MC_INSTRUCTION = "Answer with a single letter."
_SPACES = re.compile(r"\s+")
_NUMBER = re.compile(r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
_LEADING_LETTER = re.compile(r"\s*[(\[]?([A-Z])(?![A-Za-z0-9])")
_STANDALONE_LETTER = re.compile(r"(?<![A-Za-z0-9])([A-Z])(?![A-Za-z0-9])")


@dataclass(frozen=True)
class Normalisation:
    """What is ignored before an answer is compared with its target."""

    ignore_case: bool = True
    ignore_whitespace: bool = True
    """Whitespace at both ends is dropped, every inner run becomes one space."""
    ignore_punctuation: bool = False
    """Every punctuation character (Unicode category P) is dropped."""

    def apply(self, text: str) -> str:
        if self.ignore_punctuation:
            text = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
        if self.ignore_whitespace:
            text = _SPACES.sub(" ", text).strip()
        if self.ignore_case:
            text = text.casefold()
        return text


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """`text` up to the first of the stop sequences (the API cuts there too)."""
    ends = [text.find(s) for s in stop if s]
    found = [end for end in ends if end >= 0]
    return text[: min(found)] if found else text


def read_number(text: str) -> float | None:
    """The last number written in `text` (`1,000`, `-3.5`, `2e3`), or None."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    try:
        return float(found[-1].replace(",", "").replace("−", "-"))
    except ValueError:
        return None


def check_target(target: str, scorer: Scorer) -> None:
    """ValueError when `target` cannot be used by `scorer` (a bad regex, not a number)."""
    if scorer == "regex":
        try:
            re.compile(target)
        except re.error as error:
            raise ValueError(
                f"target {target!r} is not a valid regular expression: {error}"
            ) from None
    elif scorer == "numeric" and read_number(target) is None:
        raise ValueError(f"target {target!r} is not a number, which scorer 'numeric' needs")


def is_correct(
    answer: str, targets: Sequence[str], scorer: Scorer, norm: Normalisation, tolerance: float = 0
) -> bool:
    if scorer == "numeric":
        number = read_number(answer)
        if number is None:
            return False
        wanted = (read_number(t) for t in targets)
        return any(w is not None and abs(number - w) <= tolerance for w in wanted)
    if scorer == "regex":
        flags = re.IGNORECASE if norm.ignore_case else 0
        seen = replace(norm, ignore_case=False).apply(answer)
        return any(re.search(t, seen, flags) is not None for t in targets)
    seen = norm.apply(answer)
    wanted_texts = [norm.apply(t) for t in targets]
    if scorer == "includes":
        return any(w in seen for w in wanted_texts)
    return seen in wanted_texts


def mc_prompt(question: str, choices: Sequence[str]) -> str:
    lines = [f"{LETTERS[i]}. {choice}" for i, choice in enumerate(choices)]
    return f"{question}\n\n" + "\n".join(lines) + f"\n\n{MC_INSTRUCTION}"


def read_letter(text: str | None, options: int) -> str | None:
    """The option letter a sampled answer chose: a capital letter standing alone at the start
    (`B`, `B.`, `(B) 42`), else the last standalone option letter (`The answer is B`)."""
    if not text:
        return None
    letters = LETTERS[:options]
    leading = _LEADING_LETTER.match(text)
    if leading and leading.group(1) in letters:
        return leading.group(1)
    found = [c for c in _STANDALONE_LETTER.findall(text) if c in letters]
    return found[-1] if found else None


def letter_probabilities(tokens: Mapping[str, float], options: int) -> dict[str, float]:
    """The probability of each option letter among the first token's `tokens`, case and
    space variants (`" B"`, `"b"`) summed, normalised over the letters (empty when none)."""
    letters = LETTERS[:options]
    mass = dict.fromkeys(letters, 0.0)
    for token, prob in tokens.items():
        letter = token.strip().upper()
        if letter in mass and math.isfinite(prob):
            mass[letter] += prob
    total = sum(mass.values())
    if total <= 0:
        return {}
    return {letter: prob / total for letter, prob in mass.items()}


def choice_index(target: Any, choices: Sequence[str]) -> int:
    """The 0-based index of the right choice, from an index, a letter (`"B"`) or the choice's
    text; ValueError saying what the choices are otherwise."""
    count = len(choices)
    if isinstance(target, int) and not isinstance(target, bool) and 0 <= target < count:
        return target
    if isinstance(target, str):
        text = target.strip()
        if len(text) == 1 and text in LETTERS[:count]:
            return LETTERS.index(text)
        if target in choices:
            return list(choices).index(target)
        if text.isdigit() and int(text) < count:
            return int(text)
    last = LETTERS[count - 1]
    raise ValueError(
        f"target {target!r} is not one of the {count} choices: give its 0-based index "
        f"(0-{count - 1}), its letter (A-{last}) or its text exactly"
    )
