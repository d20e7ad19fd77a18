"""What planning, the frame and the judges need of a question and a judge, as protocols the
layers below `evals.questions` use without importing it (members documented on `Question`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd

    from evals.cache import SampleResult


class _Asked(Protocol):
    """What questions and judges have alike."""

    @property
    def type_name(self) -> str: ...

    @property
    def adapt(self) -> bool | None: ...

    @property
    def extra_columns(self) -> tuple[str, ...]: ...

    @property
    def no_answer(self) -> Any: ...

    def request_params(self) -> dict[str, Any]: ...

    def read_answer(self, samples: Sequence[SampleResult]) -> dict[str, Any]: ...

    def expected_completion_tokens(self) -> int: ...


class Judge(_Asked, Protocol):
    """A judge: a template asked of `model` about each answer, and how its verdict is read."""

    @property
    def model(self) -> str: ...

    @property
    def system(self) -> str | None: ...

    @property
    def prompt_template(self) -> str: ...

    @property
    def uses_question(self) -> bool: ...

    def render(self, *, question: str, answer: str) -> str: ...

    def read_answers(self, samples: Sequence[SampleResult]) -> list[dict[str, Any] | Exception]: ...


class Askable(_Asked, Protocol):
    """A question as planning, the frame and estimates need it."""

    @property
    def name(self) -> str: ...

    @property
    def samples_per_paraphrase(self) -> int: ...

    @property
    def cached_samples_per_row(self) -> int: ...

    @property
    def answer_kind(self) -> str: ...

    def conversations(self) -> list[list[dict[str, Any]]]: ...

    def question_texts(self) -> list[Any]: ...

    def prompt_factors(self) -> dict[str, list[str]]: ...

    def judge_questions(self) -> Mapping[str, Judge]: ...

    def mark_answers(self, frame: pd.DataFrame) -> pd.DataFrame: ...
