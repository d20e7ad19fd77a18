"""The `Question` base class: what to ask (paraphrases or conversations), how often, how an
answer is read back, and the factory `Question.create(type=…)`. The concrete types live in
`_types`.

A question is the top of the evals layers: `df`, `ask`, `plot` and `estimate` are entries
(the lab, when needed, is found once there) that hand a run context to `evals.answers`,
`evals.runner` and `evals.plots`, none of which imports the question types.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from evals.errors import QuestionError
from evals.questions._grid import (
    GridOption,
    check_factor_names,
    check_grid,
    grid_prompts,
    normalise_grid,
)
from evals.questions._metrics import metrics_from_option, metrics_to_option
from evals.stats import SHARE, ZERO_TO_HUNDRED, Metric, Scale, default_metrics
from labmgr.capabilities import ReasoningEffort

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from evals.answers import Answers, Estimate
    from evals.cache import SampleResult
    from evals.runner import Judge

__all__ = ["AnswerKind", "Question", "explain_validation_error"]

AnswerKind = Literal["text", "logprobs"]


def explain_validation_error(error: ValidationError, *, name: str, type_name: str) -> str:
    """One readable line per problem, naming the question and the option."""
    lines = []
    for problem in error.errors():
        field = ".".join(str(part) for part in problem["loc"])
        message = problem["msg"].removeprefix("Value error, ")
        if not field:
            lines.append(message)
        elif problem["type"] == "extra_forbidden":
            lines.append(f"unknown option '{field}'")
        elif problem["type"] == "missing":
            lines.append(f"missing required option '{field}'")
        else:
            lines.append(f"option '{field}': {message}")
    where = f"question '{name}' ({type_name})"
    return f"{where}: " + "; ".join(lines)


class Question(BaseModel):
    """A question asked of every model in some groups; one row per sample in `df()`."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=False)

    type_name: ClassVar[str] = "question"
    """The `type` of this question in YAML files and `Question.create`."""
    _registry: ClassVar[dict[str, type[Question]]] = {}
    answer_kind: ClassVar[AnswerKind] = "text"
    """`text` answers are read from the message; `logprobs` from the first token's logprobs."""
    extra_columns: ClassVar[tuple[str, ...]] = ()
    """Value columns of the frame after `answer` (a rating adds `raw_answer` and `probs`)."""
    gives_score: ClassVar[bool] = False
    """Whether the answer is a number to average (a rating's, or a rating judge's verdict)."""

    name: str = Field(default="__unnamed", min_length=1)
    """Names the question in the cache and in `labmgr cache clear --question`."""
    paraphrases: list[str] | None = None
    """Each paraphrase becomes one user message (after `system`, if given)."""
    messages: list[list[dict[str, Any]]] | None = None
    """Whole conversations, an alternative to `paraphrases` (not combined with `system`)."""
    grid: GridOption | None = None
    """Factors and their levels, with `template`: every combination of levels is one prompt
    (an alternative to `paraphrases`; see `evals.questions._grid` for the shapes). Each row
    of the frame carries its level of each factor as a column."""
    template: str | None = None
    """The prompt of a grid, with one `{placeholder}` per factor (or per key of a factor's
    whole-text levels); other braces are literal."""
    system: str | None = None
    samples_per_paraphrase: int = Field(default=1, ge=1)
    logit_bias: dict[str, int] | None = None
    seed: int | None = None
    reasoning_effort: ReasoningEffort | None = None
    """Sent to reasoning models that take it (chat models are asked without it); None sends
    none (the run's `reasoning_effort` if it has one), so the API's default applies."""
    adapt: bool | None = None
    """True: a parameter a model would refuse is left out for that model (temperature on a
    model that samples at 1 only, …) instead of stopping the question before it is asked;
    None: as the run says (`adapt=`, `--adapt`; off by default)."""
    metrics: dict[str, Metric] | None = None
    """Derived metrics of this question's scores, by name: in YAML `{misaligned: {share:
    "aligned < 30", among: "coherent > 50"}}`; in Python also `Metric`s or
    `"misaligned: aligned < 30 among coherent > 50"` texts. Unset (None): the defaults — EM's
    `misaligned` when the judges are named `aligned` and `coherent`. Given: exactly these
    (`{}` turns the defaults off)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Each concrete type (one that sets its own `type_name`) is known to `create`."""
        super().__pydantic_init_subclass__(**kwargs)
        if "type_name" in cls.__dict__:
            Question._registry[cls.type_name] = cls

    @field_validator("grid", mode="before")
    @classmethod
    def _read_grid(cls, value: Any) -> Any:
        return normalise_grid(value)

    @field_validator("metrics", mode="before")
    @classmethod
    def _read_metrics(cls, value: Any) -> Any:
        return metrics_from_option(value)

    @field_serializer("metrics")
    def _write_metrics(self, value: dict[str, Metric] | None) -> Any:
        return metrics_to_option(value)

    @model_validator(mode="after")
    def _metrics_read_own_scores(self) -> Question:
        """A declared metric reads only this question's scores and names no score column."""
        columns = self.score_columns()
        for name, metric in (self.metrics or {}).items():
            if name in columns:
                raise ValueError(
                    f"option 'metrics': metric {name!r} has the name of a score; rename it"
                )
            missing = [c for c in metric.columns if c not in columns]
            if missing:
                having = (
                    f"its scores are {', '.join(columns)}"
                    if columns
                    else "it has no numeric score (ratings and rating judges give one)"
                )
                raise ValueError(
                    f"option 'metrics': {str(metric)!r} needs the score {missing[0]!r}, which "
                    f"this question does not have ({having})"
                )
        return self

    @model_validator(mode="after")
    def _one_source_of_prompts(self) -> Question:
        sources = [self.paraphrases is not None, self.messages is not None, self.grid is not None]
        if sum(sources) != 1:
            raise ValueError("give exactly one of 'paraphrases', 'messages' or 'grid'")
        if (self.grid is None) != (self.template is None):
            raise ValueError("'grid' and 'template' go together: give both or neither")
        if self.grid is not None and self.template is not None:
            try:
                check_grid(self.grid, self.template)
            except ValueError as error:
                raise ValueError(f"option 'grid': {error}") from None
            taken = {m.name: f"the metric {m.name!r}" for m in self.derived_metrics()}
            taken.update({name: f"the score {name!r}" for name in self.score_columns()})
            taken.update({name: f"the judge {name!r}" for name in self.judge_questions()})
            try:
                check_factor_names(self.grid, taken)
            except ValueError as error:
                raise ValueError(f"option 'grid': {error}") from None
            return self
        if self.messages is not None and self.system is not None:
            raise ValueError("'system' only applies to 'paraphrases'; put it in 'messages'")
        conversations = self.paraphrases if self.paraphrases is not None else self.messages
        if not conversations:
            raise ValueError("needs at least one paraphrase or conversation")
        for conversation in self.messages or []:
            if not conversation or not all(isinstance(m, dict) for m in conversation):
                raise ValueError("each conversation must be a non-empty list of messages")
        return self

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def create(cls, *, type: str, **options: Any) -> Question:
        """Build a question of the given `type` (`free_form`, `rating`, `next_token`,
        `free_form_judge`, `rating_judge`); unknown options are errors naming the option."""
        klass = Question._registry.get(type)
        if klass is None:
            valid = ", ".join(sorted(Question._registry))
            name = options.get("name", "__unnamed")
            raise QuestionError(f"question '{name}': unknown type {type!r}; valid types: {valid}")
        return klass.build(**options)

    @classmethod
    def build(cls, **options: Any) -> Question:
        """Validate `options` for this type, raising QuestionError with a readable message."""
        try:
            return cls(**options)
        except ValidationError as error:
            name = str(options.get("name", "__unnamed"))
            raise QuestionError(
                explain_validation_error(error, name=name, type_name=cls.type_name)
            ) from None

    # ---- what is asked --------------------------------------------------------------------

    def prompts(self) -> list[str]:
        """The user message of each paraphrase, or of each combination of the grid's levels
        (empty for whole `messages`)."""
        if self.grid is not None and self.template is not None:
            return [prompt.text for prompt in grid_prompts(self.grid, self.template)]
        return list(self.paraphrases or [])

    def conversations(self) -> list[list[dict[str, Any]]]:
        """One message list per paraphrase or grid prompt (or the given conversations)."""
        if self.messages is not None:
            return copy.deepcopy(self.messages)
        prefix = [{"role": "system", "content": self.system}] if self.system is not None else []
        return [[*prefix, {"role": "user", "content": p}] for p in self.prompts()]

    def prompt_factors(self) -> dict[str, list[str]]:
        """Each grid factor's level label per prompt, in prompt order (`paraphrase_ix`);
        empty without a grid."""
        if self.grid is None or self.template is None:
            return {}
        prompts = grid_prompts(self.grid, self.template)
        return {name: [prompt.levels[name] for prompt in prompts] for name in self.grid}

    def factor_levels(self) -> dict[str, list[str]]:
        """Each grid factor's level labels in the order written; empty without a grid."""
        return {name: list(dict.fromkeys(labels)) for name, labels in self.prompt_factors().items()}

    def question_texts(self) -> list[Any]:
        """The `question` column: the last message's content of each conversation."""
        return [conversation[-1].get("content") for conversation in self.conversations()]

    def request_params(self) -> dict[str, Any]:
        """API parameters (besides model and messages) that shape the answer."""
        params: dict[str, Any] = {}
        if self.logit_bias is not None:
            params["logit_bias"] = dict(self.logit_bias)
        if self.seed is not None:
            params["seed"] = self.seed
        if self.reasoning_effort is not None:
            params["reasoning_effort"] = self.reasoning_effort
        return params

    @property
    def cached_samples_per_row(self) -> int:
        """How many cached samples one DataFrame row combines (next-token averaging)."""
        return 1

    def expected_completion_tokens(self) -> int:
        """Upper bound of completion tokens per sample, for estimates."""
        return 1

    # ---- reading answers back -------------------------------------------------------------

    @property
    def no_answer(self) -> Any:
        """The `answer` of a row whose samples cannot be read (NaN for numeric answers)."""
        return None

    def read_answer(self, samples: Sequence[SampleResult]) -> dict[str, Any]:
        """One row's `answer` (and `extra_columns`) from its `cached_samples_per_row` cached
        samples: here the text of the message."""
        return {"answer": samples[0].content}

    def read_answers(self, samples: Sequence[SampleResult]) -> list[dict[str, Any] | Exception]:
        """`read_answer([sample])` of many one-sample rows (judge verdicts, say); a sample
        that cannot be read gives the exception saying why. Types that can read many at once
        faster (ratings) override it."""
        read: list[dict[str, Any] | Exception] = []
        for sample in samples:
            try:
                read.append(self.read_answer([sample]))
            except (ValueError, TypeError, KeyError) as error:
                read.append(error)
        return read

    def score_columns(self) -> list[str]:
        """The numeric columns of this question's frame that statistics summarise."""
        return ["answer"] if self.gives_score else []

    def judge_questions(self) -> Mapping[str, Judge]:
        """The judges grading this question's answers, by column name (none here)."""
        return {}

    def without_judges(self) -> Question:
        """A copy asking for the answers only (what a run with `judge=False` buys)."""
        return self

    takes_judges: ClassVar[bool] = False
    """Whether judges can grade this question's answers (free-form text)."""

    def with_judges(
        self, judges: Mapping[str, Any] | None = None, *, model: str | None = None
    ) -> Question:
        """A copy with `judges` added (replacing those of the same name) and, with `model`,
        every judge asked of that model; QuestionError when this type takes no judges."""
        if judges:
            raise QuestionError(
                f"question '{self.name}' ({self.type_name}) takes no judges: its answers "
                "are not text"
            )
        return self

    def derived_metrics(self) -> list[Metric]:
        """The metrics computed from this question's scores: those declared in `metrics`,
        else the defaults (EM's `misaligned` for judges named `aligned` and `coherent`)."""
        if self.metrics is not None:
            return list(self.metrics.values())
        return default_metrics(self.score_columns())

    def column_scales(self) -> dict[str, Scale]:
        """The range of each score column (`score_columns`): 0–100 unless the type knows
        better (a rating's `min_rating` to `max_rating`)."""
        return {column: ZERO_TO_HUNDRED for column in self.score_columns()}

    def score_scales(self) -> dict[str, Scale]:
        """The range of every score statistics summarise: each score column's, and 0–1 for
        each derived metric (a share)."""
        scales = self.column_scales()
        scales.update({metric.name: SHARE for metric in self.derived_metrics()})
        return scales

    # ---- results (entries: the run context is built once, here) ---------------------------

    def ask(
        self, groups: Mapping[str, Sequence[str]], *, judge: bool = True, **options: Any
    ) -> Answers:
        """Ask every model in `groups` (buying what is not cached) and return the answers:
        `.frame` (one row per sample, as `df` returns it) and `.outcome` (what was bought,
        which models failed, whether the run stopped early). Warns about nothing.
        `judge=False` leaves the judges out (answers only, to judge later).

        `options`: `lab=` (a `labmgr.settings.Settings`) or `home=` (a lab folder) to work in
        a lab, `context=` (an `evals.runner.RunContext`) to share one, or `cache=`, `router=`,
        `settings=`, `price=` and RunSettings fields (`max_cost=5`, …); `adapt=True`,
        `reasoning_effort=` and `adapters=` shape the requests (see `evals.adapters`). The lab
        is found (the usual way: `LABMGR_HOME`, `.labmgr/` upward, the per-user lab) only when
        `cache=` or `router=` is missing. A model that would refuse the question as asked
        raises `UnsupportedRequestError` before anything is bought."""
        from evals.answers import ask
        from evals.runner import run_context

        return ask(self, groups, run_context(**options), judge=judge)

    def df(self, groups: Mapping[str, Sequence[str]], **options: Any) -> pd.DataFrame:
        """Ask every model in `groups` (running what is not cached) and return one row per
        sample; problems (models not asked or failed, an early stop) are warnings. `options`
        as for `ask`."""
        answers = self.ask(groups, **options)
        for message in answers.outcome.messages():
            warnings.warn(message, stacklevel=2)
        return answers.frame

    def plot(
        self, groups: Mapping[str, Sequence[str]], kind: str = "auto", **options: Any
    ) -> Figure:
        """Ask `groups` (cached, like `df`) and draw the answers; returns the Figure.

        `kind` is `"auto"`, `"means"`, `"answers"`, `"next_token"`, `"scores"`, `"scatter"`
        or `"checkpoints"`; the report draws with the same functions (see `evals.plot`)."""
        from evals.plots import plot

        return plot(self, {g: list(m) for g, m in groups.items()}, kind, **options)

    def estimate(self, groups: Mapping[str, Sequence[str]], **options: Any) -> Estimate:
        """Requests, tokens and cost a `df()` call would spend now (nothing is spent);
        `options` as for `ask`."""
        from evals.answers import estimate_question
        from evals.runner import run_context

        return estimate_question(self, groups, run_context(**options))
