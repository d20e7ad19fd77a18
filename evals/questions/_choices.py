"""Multiple choice: lettered choices, the letter read from the sampled answer (`score:
sampled`) or the first token's logprobs (`score: logprobs`) and checked against the target."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, model_validator

from evals.answers import token_probabilities
from evals.questions._base import AnswerKind, Question, insert_after_sample
from evals.questions._dataset import as_text
from evals.questions._targets import (
    LETTERS,
    choice_index,
    letter_probabilities,
    mc_prompt,
    read_letter,
)
from evals.questions._types import _TextQuestion, logprob_params
from evals.stats import SHARE, Scale

if TYPE_CHECKING:
    import pandas as pd

    from evals.cache import SampleResult


class MultipleChoice(_TextQuestion):
    """Choices lettered A, B, …; `answer` is the chosen letter, `correct` whether it is the
    `target`'s, and with `score: logprobs` `p_correct` the probability on the right letter."""

    type_name: ClassVar[str] = "multiple_choice"
    choices: Annotated[
        list[str] | str,
        BeforeValidator(lambda v: [as_text(c) for c in v] if isinstance(v, list | tuple) else v),
    ]
    """The choices' texts; with a dataset a `"{field}"` holding a list, or templates."""
    target: Any = None
    """The right choice's 0-based index, letter or text (a list: one per paraphrase)."""
    score: Literal["sampled", "logprobs"] = "sampled"
    """`sampled`: the letter of each sampled answer; `logprobs`: the most probable letter of
    the first token (`max_tokens` 1, `temperature` 0, 20 top logprobs)."""

    @model_validator(mode="after")
    def _choices_and_target(self) -> MultipleChoice:
        if self.messages is not None:
            raise ValueError("'multiple_choice' takes 'paraphrases' (or a grid), not 'messages'")
        if isinstance(self.choices, str) and self.dataset is None:
            raise ValueError(
                "option 'choices': give a list of choices (a single '{field}' only with a dataset)"
            )
        self.prompt_choices()
        if self.target is not None:
            self.prompt_targets()
        return self

    @property
    def answer_kind(self) -> AnswerKind:
        return "logprobs" if self.score == "logprobs" else "text"

    def prompt_choices(self) -> list[list[str]]:
        return self.each_prompt([self.choices] * self._count_per_row(), "choices", _choice_list)

    def prompt_targets(self) -> list[int]:
        choices = iter(self.prompt_choices())
        return self.each_prompt(self.target, "target", lambda t: choice_index(t, next(choices)))

    def prompts(self) -> list[str]:
        texts = super().prompts()
        return [mc_prompt(t, c) for t, c in zip(texts, self.prompt_choices(), strict=True)]

    def request_params(self) -> dict[str, Any]:
        if self.score == "sampled":
            return super().request_params()
        return {**Question.request_params(self), **logprob_params(20)}

    def expected_completion_tokens(self) -> int:
        return 1 if self.score == "logprobs" else self.max_tokens

    def read_answer(self, samples: Sequence[SampleResult]) -> dict[str, Any]:
        """The text, or the first token's probabilities (`mark_answers` reads the letter)."""
        if self.score == "logprobs":
            return {"answer": token_probabilities(samples[0].top_logprobs())}
        return super().read_answer(samples)

    def has_target(self) -> bool:
        return self.target is not None

    def mark_answers(self, frame: pd.DataFrame) -> pd.DataFrame:
        """`answer` becomes the chosen letter (what was read moves to `raw_answer`), with
        `item`, `target`, `correct` (NaN without an answer, 0 naming no letter) and with
        logprobs `p_correct` and `probs` (each letter's normalised probability)."""
        counts = [len(c) for c in self.prompt_choices()]
        right = [LETTERS[i] for i in self.prompt_targets()] if self.target is not None else None
        raw = frame["raw_answer"] if "raw_answer" in frame.columns else frame["answer"]
        logprobs = self.score == "logprobs"
        letters: list[str | None] = []
        answered: list[bool] = []
        probs: list[dict[str, float] | None] = []
        for value, ix in zip(raw.tolist(), frame["paraphrase_ix"].tolist(), strict=True):
            if logprobs:
                mine = letter_probabilities(value, counts[ix]) if isinstance(value, Mapping) else {}
                letters.append(max(mine, key=mine.__getitem__) if mine else None)
                probs.append(mine if isinstance(value, Mapping) else None)
                answered.append(isinstance(value, Mapping))
            else:
                answered.append(isinstance(value, str) and bool(value))
                letters.append(read_letter(value, counts[ix]) if answered[-1] else None)
        marks = self.answer_marks(frame)
        if right is not None:
            rows = frame["paraphrase_ix"].tolist()
            marks["target"] = self.per_row(frame, right)
            marks["correct"] = [
                float(letter == right[ix]) if ok else math.nan
                for letter, ix, ok in zip(letters, rows, answered, strict=True)
            ]
            if logprobs:
                marks["p_correct"] = [
                    math.nan if p is None else p.get(right[ix], 0.0)
                    for p, ix in zip(probs, rows, strict=True)
                ]
        marks["raw_answer"] = raw.tolist()
        if logprobs:
            marks["probs"] = probs
        marked = insert_after_sample(frame, marks)
        marked["answer"] = letters
        return marked

    def score_columns(self) -> list[str]:
        if self.target is None:
            return []
        return ["correct", "p_correct"] if self.score == "logprobs" else ["correct"]

    def column_scales(self) -> dict[str, Scale]:
        return {c: SHARE if c == "correct" else Scale(0.0, 1.0) for c in self.score_columns()}


def _choice_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not 2 <= len(value) <= len(LETTERS):
        raise ValueError(f"expected a list of 2 to 26 choices, got {value!r}")
    return [as_text(v) for v in value]
