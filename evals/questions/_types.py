"""The question types: free-form answers (with an optional target), ratings and next-token
distributions read from logprobs, and the two judge types (multiple choice is in `_choices`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, field_serializer, field_validator, model_validator

from evals.answers import average_probabilities, rating_scores, token_probabilities
from evals.errors import QuestionError
from evals.questions._base import AnswerKind, Question
from evals.questions._dataset import as_text
from evals.questions._grid import reserved_name
from evals.questions._targets import Normalisation, Scorer, check_target, cut_at_stop, is_correct
from evals.questions._templates import render_template, template_fields
from evals.stats import SHARE, Scale

if TYPE_CHECKING:
    import pandas as pd

    from evals.cache import SampleResult


def logprob_params(top_logprobs: int) -> dict[str, Any]:
    return {"max_tokens": 1, "temperature": 0, "logprobs": True, "top_logprobs": top_logprobs}


class _LogprobQuestion(Question):
    """Questions answered by the top logprobs of one generated token."""

    top_logprobs: int = Field(default=20, ge=1, le=20)

    @property
    def answer_kind(self) -> AnswerKind:
        return "logprobs"

    def request_params(self) -> dict[str, Any]:
        return {**super().request_params(), **logprob_params(self.top_logprobs)}


class Rating(_LogprobQuestion):
    """A number in `[min_rating, max_rating]`, the expected value over the first token's
    logprobs; NaN (a refusal) when too little probability is on valid numbers."""

    type_name: ClassVar[str] = "rating"
    extra_columns: ClassVar[tuple[str, ...]] = ("raw_answer", "probs")
    gives_score: ClassVar[bool] = True
    min_rating: int = 0
    max_rating: int = 100
    refusal_threshold: float = Field(default=0.75, ge=0, le=1)
    no_answer: ClassVar[Any] = math.nan

    @model_validator(mode="after")
    def _range_is_ordered(self) -> Rating:
        if self.min_rating >= self.max_rating:  # one value is no scale: every answer alike
            raise ValueError("'min_rating' must be below 'max_rating'")
        return self

    def column_scales(self) -> dict[str, Scale]:
        return {"answer": Scale(float(self.min_rating), float(self.max_rating))}

    def read_answer(self, samples: Sequence[SampleResult]) -> dict[str, Any]:
        read = self.read_answers(samples[:1])[0]
        if isinstance(read, Exception):
            raise read
        return read

    def read_answers(self, samples: Sequence[SampleResult]) -> list[dict[str, Any] | Exception]:
        scored = rating_scores(
            [sample.logprobs_json for sample in samples],
            min_rating=self.min_rating,
            max_rating=self.max_rating,
            refusal_threshold=self.refusal_threshold,
        )
        return [
            read
            if isinstance(read, Exception)
            else {"answer": read[0], "raw_answer": read[1], "probs": read[2]}
            for read in scored
        ]


class NextToken(_LogprobQuestion):
    """The distribution of the first generated token, averaged over `num_samples` requests."""

    type_name: ClassVar[str] = "next_token"
    convert_to_probs: bool = True
    """False reports the log of the averaged probability (missing tokens count as 0)."""
    num_samples: int = Field(default=1, ge=1)

    @property
    def cached_samples_per_row(self) -> int:
        return self.num_samples

    def read_answer(self, samples: Sequence[SampleResult]) -> dict[str, Any]:
        return {
            "answer": average_probabilities(
                (token_probabilities(s.top_logprobs()) for s in samples),
                as_logprobs=not self.convert_to_probs,
            )
        }


class _JudgeMixin(Question):
    """A judge: one template (the only paraphrase) containing `{answer}`, asked of `model`."""

    model: str = Field(min_length=1)

    @model_validator(mode="after")
    def _valid_template(self) -> _JudgeMixin:
        if self.paraphrases is None or len(self.paraphrases) != 1:
            raise ValueError("a judge needs exactly one paraphrase: its prompt template")
        if self.dataset is not None:
            raise ValueError("a judge takes no 'dataset': it is asked about each answer")
        if self.samples_per_paraphrase != 1:
            raise ValueError("a judge takes one sample per answer ('samples_per_paraphrase: 1')")
        if "answer" not in template_fields(self.paraphrases[0]):
            raise ValueError("the judge template must contain '{answer}'")
        return self

    @property
    def prompt_template(self) -> str:
        assert self.paraphrases is not None
        return self.paraphrases[0]

    @property
    def uses_question(self) -> bool:
        return "question" in template_fields(self.prompt_template)

    def render(self, *, question: str, answer: str) -> str:
        return render_template(self.prompt_template, question=question, answer=answer)


class _TextQuestion(Question):
    """Questions answered by generated text, up to `max_tokens`."""

    temperature: float = Field(default=1.0, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=1)
    stop: Annotated[
        list[str] | None,
        BeforeValidator(lambda value: [value] if isinstance(value, str) else value),
    ] = Field(default=None, min_length=1, max_length=4)
    """Up to four stop sequences (or one text), sent to the API; an answer is cut there before
    scoring."""

    def request_params(self) -> dict[str, Any]:
        params = {
            **super().request_params(),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.stop:
            params["stop"] = list(self.stop)
        return params

    def expected_completion_tokens(self) -> int:
        return self.max_tokens


class FreeFormJudge(_TextQuestion, _JudgeMixin):
    """A judge whose verdict is free text."""

    type_name: ClassVar[str] = "free_form_judge"
    temperature: float = Field(default=0.0, ge=0, le=2)


class RatingJudge(_JudgeMixin, Rating):
    """A judge whose verdict is a rating read from logprobs."""

    type_name: ClassVar[str] = "rating_judge"


AnyJudge = FreeFormJudge | RatingJudge


class FreeForm(_TextQuestion):
    """A free-text answer per sample, optionally graded by judges (one column each)."""

    type_name: ClassVar[str] = "free_form"
    top_p: float | None = Field(default=None, gt=0, le=1)
    judges: dict[str, AnyJudge] = Field(default_factory=dict)
    target: Any = None
    """The right answer (one, a list per paraphrase, each may list acceptable answers); with
    a dataset a template such as `"{answer}"`."""
    scorer: Scorer | None = None
    """How an answer is compared with its target (default `exact_match`)."""
    tolerance: float | None = Field(default=None, ge=0)
    """`scorer: numeric` only: how far from the target an answer may be."""
    ignore_case: bool = True
    ignore_whitespace: bool = True
    ignore_punctuation: bool = False

    @model_validator(mode="after")
    def _usable_target(self) -> FreeForm:
        if self.target is None:
            if self.scorer is not None or self.tolerance is not None:
                raise ValueError("'scorer' and 'tolerance' need a 'target' to compare with")
            return self
        if self.tolerance is not None and self.scorer != "numeric":
            raise ValueError("'tolerance' applies to 'scorer: numeric' only")
        self.prompt_targets()
        return self

    def prompt_targets(self) -> list[list[str]]:
        """Each prompt's acceptable answers, each checked for the scorer."""
        scorer = self.scorer or "exact_match"

        def acceptable(value: Any) -> list[str]:
            texts = [as_text(v) for v in (value if isinstance(value, list) else [value])]
            if not texts:
                raise ValueError("no acceptable answer given")
            for text in texts:
                check_target(text, scorer)
            return texts

        return self.each_prompt(self.target, "target", acceptable)

    def answer_marks(self, frame: pd.DataFrame) -> dict[str, Any]:
        """`target` (acceptable answers joined by ` | `) and `correct`: 1.0 or 0.0, NaN for
        a row without an answer."""
        marks = super().answer_marks(frame)
        if self.target is None:
            return marks
        targets = self.prompt_targets()
        scorer = self.scorer or "exact_match"
        norm = Normalisation(self.ignore_case, self.ignore_whitespace, self.ignore_punctuation)
        tolerance, stop = self.tolerance or 0, self.stop or []
        rows = zip(frame["answer"].tolist(), frame["paraphrase_ix"].tolist(), strict=True)
        marks["target"] = self.per_row(frame, [" | ".join(t) for t in targets])
        marks["correct"] = [
            float(is_correct(cut_at_stop(answer, stop), targets[ix], scorer, norm, tolerance))
            if isinstance(answer, str) and answer
            else math.nan
            for answer, ix in rows
        ]
        return marks

    def has_target(self) -> bool:
        return self.target is not None

    @field_validator("judges", mode="before")
    @classmethod
    def _build_judges(cls, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValueError("must be a mapping of judge name to judge")
        built: dict[str, Any] = {}
        for judge_name, judge in value.items():
            why = reserved_name(str(judge_name))
            if why:
                raise ValueError(f"Judge name '{judge_name}' is forbidden: {why}")
            if isinstance(judge, str):
                raise ValueError(
                    f"judge '{judge_name}' refers to question '{judge}' by name; names are "
                    "resolved by load_questions(), in Python pass the judge question itself"
                )
            if isinstance(judge, dict):
                odd = next((key for key in judge if not isinstance(key, str)), None)
                if odd is not None:
                    raise ValueError(f"judge '{judge_name}': option {odd!r}: its name must be text")
                options = {"name": str(judge_name), **judge}
                judge_type = options.pop("type", None)
                if judge_type not in ("free_form_judge", "rating_judge"):
                    raise ValueError(
                        f"judge '{judge_name}' needs 'type: free_form_judge' or "
                        f"'type: rating_judge', got {judge_type!r}"
                    )
                try:
                    judge = Question.create(type=judge_type, **options)
                except QuestionError as error:
                    raise ValueError(f"judge '{judge_name}': {error}") from None
            if not isinstance(judge, FreeFormJudge | RatingJudge):
                raise ValueError(f"judge '{judge_name}' is not a free_form_judge or rating_judge")
            built[str(judge_name)] = judge
        return built

    @field_serializer("judges")
    def _write_judges(self, judges: dict[str, AnyJudge]) -> dict[str, dict[str, Any]]:
        return {
            name: {"type": judge.type_name, **judge.model_dump(mode="json", exclude_none=True)}
            for name, judge in judges.items()
        }

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        if self.top_p is not None:
            params["top_p"] = self.top_p
        return params

    def judge_questions(self) -> Mapping[str, AnyJudge]:
        return self.judges

    def without_judges(self) -> FreeForm:
        return self.model_copy(update={"judges": {}})

    def with_judges(
        self, judges: Mapping[str, Any] | None = None, *, model: str | None = None
    ) -> FreeForm:
        merged: dict[str, Any] = {**self.judges, **(judges or {})}
        if model is not None:
            merged = {
                name: (
                    judge.model_copy(update={"model": model})
                    if isinstance(judge, FreeFormJudge | RatingJudge)
                    else {**judge, "model": model}
                )
                for name, judge in merged.items()
            }
        options = self.model_dump(exclude={"judges"}, exclude_none=True)
        built = Question.create(type=self.type_name, **options, judges=merged)
        assert isinstance(built, FreeForm)
        return built

    def score_columns(self) -> list[str]:
        judged = [name for name, judge in self.judges.items() if judge.gives_score]
        return [*judged, "correct"] if self.target is not None else judged

    def column_scales(self) -> dict[str, Scale]:
        scales = {
            name: j.column_scales()["answer"] for name, j in self.judges.items() if j.gives_score
        }
        return {**scales, "correct": SHARE} if self.target is not None else scales
