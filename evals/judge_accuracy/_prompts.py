"""The prompts a judge is asked (a pair in one order, an answer and its labels, an answer to
rate) and how its verdict is read back. Texts from the file are put in as they are, never
re-read as a template."""

from __future__ import annotations

import re
from collections.abc import Sequence

RATING_PROMPT = """How good is this answer to the question? Rate it from 0 to 100 and reply \
with the number only.

[QUESTION START]
{question}
[QUESTION END]

[ANSWER START]
{answer}
[ANSWER END]"""
"""The rating judge of scored items (a run's own judge of the score replaces it)."""


def pair_prompt(question: str, first: str, second: str) -> str:
    """Two answers to `question`, `first` shown as A: which is better?"""
    return (
        "Here is a question and two answers to it.\n\n"
        f"[QUESTION START]\n{question}\n[QUESTION END]\n\n"
        f"[ANSWER A START]\n{first}\n[ANSWER A END]\n\n"
        f"[ANSWER B START]\n{second}\n[ANSWER B END]\n\n"
        "Which answer is better? Answer with a single letter: A or B."
    )


def label_prompt(question: str, answer: str, labels: Sequence[str]) -> str:
    """An answer to `question`: which of `labels` fits it?"""
    return (
        "Here is a question and an answer to it.\n\n"
        f"[QUESTION START]\n{question}\n[QUESTION END]\n\n"
        f"[ANSWER START]\n{answer}\n[ANSWER END]\n\n"
        "Which label fits the answer?\n"
        f"Labels: {', '.join(labels)}\n"
        "Answer with one of the labels only."
    )


_LEADING_LETTER = re.compile(r"^\W*([AB])\b")
_LETTER = re.compile(r"\b([AB])\b")


def read_position(text: str | None) -> str | None:
    """The answer a pairwise verdict picks, ``A`` or ``B``: a letter standing alone at the
    start (``B``, ``B.``, ``(A)``), else the last standalone A or B (``The answer is B``);
    None when there is none."""
    if not text:
        return None
    leading = _LEADING_LETTER.match(text.strip())
    if leading:
        return leading.group(1)
    found = _LETTER.findall(text)
    return found[-1] if found else None


def read_label(text: str | None, labels: Sequence[str]) -> str | None:
    """The label a verdict gives: the whole text (case, spaces and end punctuation aside),
    else the one label it names as a word; None when it names none or several."""
    if not text:
        return None
    said = text.strip().strip(".!\"'`*").strip().lower()
    by_text = {label.lower(): label for label in labels}
    if said in by_text:
        return by_text[said]
    named = [
        label
        for label in labels
        if re.search(r"(?<![\w-])" + re.escape(label.lower()) + r"(?![\w-])", said)
    ]
    return named[0] if len(named) == 1 else None
