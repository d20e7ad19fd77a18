"""The `Question` base class: what to ask, how often, how an answer is read back, and the
factory `Question.create(type=…)`; `df`, `ask`, `plot` and `estimate` are entries."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    model_validator,
)

from evals.errors import QuestionError, validation_problems
from evals.questions._dataset import Dataset, as_text, fill
from evals.questions._grid import (
    GridOption,
    check_factor_names,
    check_grid,
    grid_prompts,
    normalise_grid,
)
from evals.stats import SHARE, ZERO_TO_HUNDRED, Metric, MetricError, Scale, default_metrics
from labmgr.capabilities import ReasoningEffort

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from evals.answers import Answers, Estimate
    from evals.cache import SampleResult
    from evals.runner import Judge

AnswerKind = Literal["text", "logprobs"]
T = TypeVar("T")


def _read_metrics(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {str(name): _metric(str(name), spec) for name, spec in value.items()}
    if not isinstance(value, list | tuple):
        raise MetricError(
            "expected a mapping of metric name to {share: 'aligned < 30', among: "
            "'coherent > 50'}, or a list of texts like 'misaligned: aligned < 30 among "
            f"coherent > 50', got {type(value).__name__}"
        )
    metrics: dict[str, Metric] = {}
    for item in value:
        metric = item if isinstance(item, Metric) else Metric.parse(item)
        if metric.name in metrics:
            raise MetricError(f"two metrics are named {metric.name!r}")
        metrics[metric.name] = metric
    return metrics


class Question(BaseModel):
    """A question asked of every model in some groups; one row per sample in `df()`."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    type_name: ClassVar[str] = "question"
    """The `type` in YAML files and `Question.create`."""
    _registry: ClassVar[dict[str, type[Question]]] = {}
    extra_columns: ClassVar[tuple[str, ...]] = ()
    """Value columns of the frame after `answer` (a rating adds `raw_answer` and `probs`)."""
    gives_score: ClassVar[bool] = False
    """Whether the answer is a number to average."""
    no_answer: ClassVar[Any] = None
    """The `answer` of a row whose samples cannot be read (NaN for numeric answers)."""

    name: str = Field(default="__unnamed", min_length=1)
    """Names the question in the cache and in `labmgr cache clear --question`."""
    paraphrases: list[str] | None = None
    """Each paraphrase becomes one user message (after `system`, if given)."""
    messages: list[list[dict[str, Any]]] | None = None
    """Whole conversations, an alternative to `paraphrases` (not combined with `system`)."""
    grid: Annotated[GridOption | None, BeforeValidator(normalise_grid)] = None
    """Factors and their levels, with `template`: every combination of levels is a prompt."""
    template: str | None = None
    """The prompt of a grid, with a `{placeholder}` per factor; other braces are literal."""
    dataset: Annotated[
        Dataset | None,
        BeforeValidator(lambda value: None if value is None else Dataset.read(value)),
        PlainSerializer(lambda value: None if value is None else value.rows),
    ] = None
    """Rows (a `.jsonl`/`.csv` file or a list of mappings) filling the `{field}`s of the
    paraphrases, target and choices: every row × paraphrase is one prompt. Written with the
    rows inline: run.json holds what was asked even if the file changes."""
    system: str | None = None
    samples_per_paraphrase: int = Field(default=1, ge=1)
    logit_bias: dict[str, int] | None = None
    seed: int | None = None
    reasoning_effort: ReasoningEffort | None = None
    """Sent to reasoning models that take it; None: the run's, else none (the API's default)."""
    adapt: bool | None = None
    """True: a parameter a model would refuse is left out for that model instead of stopping
    the question; None: as the run says (off by default)."""
    metrics: Annotated[
        dict[str, Metric] | None,
        BeforeValidator(_read_metrics),
        PlainSerializer(
            lambda value: None if value is None else {n: m.spec() for n, m in value.items()}
        ),
    ] = None
    """Derived metrics of its scores by name (`{misaligned: {share: "aligned < 30", among:
    "coherent > 50"}}`, `Metric`s or texts); None: the defaults, `{}`: none."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Each type that sets its own `type_name` is known to `create`."""
        super().__pydantic_init_subclass__(**kwargs)
        if "type_name" in cls.__dict__:
            Question._registry[cls.type_name] = cls

    @model_validator(mode="after")
    def _metrics_read_own_scores(self) -> Question:
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
            taken = {m.name: f"the metric {m.name!r}" for m in self.derived_metrics()}
            taken.update({name: f"the score {name!r}" for name in self.score_columns()})
            taken.update({name: f"the judge {name!r}" for name in self.judge_questions()})
            try:
                check_grid(self.grid, self.template)
                check_factor_names(self.grid, taken)
            except ValueError as error:
                raise ValueError(f"option 'grid': {error}") from None
            return self
        if self.dataset is not None:
            if self.paraphrases is None:
                raise ValueError("'dataset' fills the '{field}'s of 'paraphrases'; give those")
            self.dataset.items()  # ids are unique
            self.prompts()  # every row has the fields the paraphrases use
        if self.messages is not None and self.system is not None:
            raise ValueError("'system' only applies to 'paraphrases'; put it in 'messages'")
        conversations = self.paraphrases if self.paraphrases is not None else self.messages
        if not conversations:
            raise ValueError("needs at least one paraphrase or conversation")
        for number, conversation in enumerate(self.messages or []):
            if not conversation or not all(isinstance(m, dict) for m in conversation):
                raise ValueError("each conversation must be a non-empty list of messages")
            roleless = next((i for i, m in enumerate(conversation) if not m.get("role")), None)
            if roleless is not None:  # every API refuses it: every sample would fail
                raise ValueError(
                    f"option 'messages': conversation {number}, message {roleless} has no "
                    "'role' (user, system or assistant)"
                )
        return self

    @classmethod
    def create(cls, *, type: str, **options: Any) -> Question:
        """A question of `type` (`free_form`, `rating`, …; `id` is read as `name`); a bad
        option is a QuestionError naming the question and option."""
        if "id" in options and "name" not in options:  # the contract's files name it `id`
            options["name"] = str(options.pop("id"))
        name = options.get("name", "__unnamed")
        klass = Question._registry.get(type)
        if klass is None:
            valid = ", ".join(sorted(Question._registry))
            raise QuestionError(f"question '{name}': unknown type {type!r}; valid types: {valid}")
        try:
            return klass(**options)
        except ValidationError as error:
            problems = validation_problems(error)
            raise QuestionError(f"question '{name}' ({type}): {problems}") from None

    def prompts(self) -> list[str]:
        """The user message of each paraphrase or grid prompt (none for `messages`)."""
        if self.grid is not None and self.template is not None:
            return [prompt.text for prompt in grid_prompts(self.grid, self.template)]
        if self.dataset is not None and self.paraphrases is not None:
            return [as_text(text) for text in self.prompt_values(self.paraphrases, "paraphrases")]
        return list(self.paraphrases or [])

    def prompt_values(self, value: Any, option: str) -> list[Any]:
        """`value` for each prompt: a list gives one value per paraphrase (conversation, grid
        prompt), anything else is the same for all; with a dataset, each row fills it."""
        count = self._count_per_row()
        if isinstance(value, list) and len(value) != count:
            raise ValueError(
                f"option '{option}' lists {len(value)} values for {count} paraphrases; give one "
                "per paraphrase, or a single value for all"
            )
        values = list(value) if isinstance(value, list) else [value] * count
        if self.dataset is None:
            return values
        rows = zip(self.dataset.rows, self.dataset.places, strict=True)
        return [fill(v, row, place, option) for row, place in rows for v in values]

    def each_prompt(self, value: Any, option: str, read: Callable[[Any], T]) -> list[T]:
        """`read` of each prompt's value of `option` (as `prompt_values`); a ValueError it
        raises is named by the prompt's place and the option."""
        found = []
        for one, place in zip(self.prompt_values(value, option), self.prompt_places(), strict=True):
            try:
                found.append(read(one))
            except ValueError as error:
                raise ValueError(f"{place}: option '{option}': {error}") from None
        return found

    def prompt_places(self) -> list[str]:
        """Where each prompt comes from, for messages: its dataset row, else `paraphrase N`."""
        if self.dataset is not None:
            return self._per_row(self.dataset.places)
        return [f"paraphrase {n}" for n in range(self._count_per_row())]

    def prompt_items(self) -> list[str]:
        """The `item` of each prompt: its dataset row's `id` (else row number), or without a
        dataset the paraphrase index, as text."""
        if self.dataset is not None:
            return self._per_row(self.dataset.items())
        return [str(n) for n in range(self._count_per_row())]

    def _per_row(self, values: list[str]) -> list[str]:
        count = self._count_per_row()
        return [value for value in values for _ in range(count)]

    def _count_per_row(self) -> int:
        if self.grid is not None and self.template is not None:
            return len(grid_prompts(self.grid, self.template))
        return len(self.paraphrases or self.messages or [])

    def conversations(self) -> list[list[dict[str, Any]]]:
        """One message list per paraphrase or grid prompt (or the given conversations)."""
        if self.messages is not None:
            return copy.deepcopy(self.messages)
        prefix = [{"role": "system", "content": self.system}] if self.system is not None else []
        return [[*prefix, {"role": "user", "content": p}] for p in self.prompts()]

    def prompt_factors(self) -> dict[str, list[str]]:
        """Each grid factor's level label per prompt, in prompt order (none without a grid)."""
        if self.grid is None or self.template is None:
            return {}
        prompts = grid_prompts(self.grid, self.template)
        return {name: [prompt.levels[name] for prompt in prompts] for name in self.grid}

    def factor_levels(self) -> dict[str, list[str]]:
        return {name: list(dict.fromkeys(labels)) for name, labels in self.prompt_factors().items()}

    def question_texts(self) -> list[Any]:
        """The `question` column: each conversation's last message's content."""
        return [conversation[-1].get("content") for conversation in self.conversations()]

    def request_params(self) -> dict[str, Any]:
        """API parameters (besides model and messages) that shape the answer."""
        given: dict[str, Any] = {"logit_bias": self.logit_bias, "seed": self.seed}
        given["reasoning_effort"] = self.reasoning_effort
        return {key: copy.copy(value) for key, value in given.items() if value is not None}

    @property
    def answer_kind(self) -> AnswerKind:
        """`text`: read from the message; `logprobs`: from the first token's logprobs."""
        return "text"

    @property
    def cached_samples_per_row(self) -> int:
        """How many cached samples one frame row combines (next-token averaging)."""
        return 1

    def expected_completion_tokens(self) -> int:
        """Upper bound of completion tokens per sample, for estimates."""
        return 1

    def read_answer(self, samples: Sequence[SampleResult]) -> dict[str, Any]:
        """One row's `answer` (and `extra_columns`) from its cached samples."""
        return {"answer": samples[0].content}

    def read_answers(self, samples: Sequence[SampleResult]) -> list[dict[str, Any] | Exception]:
        """`read_answer([sample])` of many one-sample rows (judge verdicts); a sample that
        cannot be read gives the exception saying why."""
        read: list[dict[str, Any] | Exception] = []
        for sample in samples:
            try:
                read.append(self.read_answer([sample]))
            except (ValueError, TypeError, KeyError) as error:
                read.append(error)
        return read

    def mark_answers(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The frame with `item`, `target` and `correct` (as the type has them) after
        `sample_ix`; marking a marked frame again gives the same frame."""
        marks = self.answer_marks(frame)
        return insert_after_sample(frame, marks) if marks else frame

    def answer_marks(self, frame: pd.DataFrame) -> dict[str, Any]:
        if self.dataset is None and not self.has_target():
            return {}
        return {"item": self.per_row(frame, self.prompt_items())}

    def has_target(self) -> bool:
        """Whether answers are checked against a right answer (`correct`)."""
        return False

    def per_row(self, frame: pd.DataFrame, per_prompt: Sequence[Any]) -> list[Any]:
        """A value per prompt laid out on the frame's rows (by `paraphrase_ix`)."""
        return [per_prompt[ix] for ix in frame["paraphrase_ix"].tolist()]

    def score_columns(self) -> list[str]:
        """The numeric columns of this question's frame that statistics summarise."""
        return ["answer"] if self.gives_score else []

    def judge_questions(self) -> Mapping[str, Judge]:
        """The judges grading this question's answers, by column name."""
        return {}

    def without_judges(self) -> Question:
        """A copy asking for the answers only (what a run with `judge=False` buys)."""
        return self

    def with_judges(
        self, judges: Mapping[str, Any] | None = None, *, model: str | None = None
    ) -> Question:
        """A copy with `judges` added (replacing those of the same name), with `model` every
        judge asked of that model; QuestionError for a type that takes no judges."""
        if judges:
            raise QuestionError(
                f"question '{self.name}' ({self.type_name}) takes no judges: its answers "
                "are not text"
            )
        return self

    def derived_metrics(self) -> list[Metric]:
        """The metrics declared in `metrics`, else the defaults of its scores."""
        if self.metrics is not None:
            return list(self.metrics.values())
        return default_metrics(self.score_columns())

    def column_scales(self) -> dict[str, Scale]:
        """The range of each score column: 0–100 unless the type knows better."""
        return {column: ZERO_TO_HUNDRED for column in self.score_columns()}

    def score_scales(self) -> dict[str, Scale]:
        """The range of each score column, and 0–1 for each derived metric (a share)."""
        scales = self.column_scales()
        scales.update({metric.name: SHARE for metric in self.derived_metrics()})
        return scales

    def ask(
        self, groups: Mapping[str, Sequence[str]], *, judge: bool = True, **options: Any
    ) -> Answers:
        """Ask every model in `groups`, buying what is not cached: `.frame` (a row per sample)
        and `.outcome`. `options` go to `evals.runner.run_context` (`lab=`, `context=`, …)."""
        from evals.answers import ask
        from evals.runner import run_context

        return ask(self, groups, run_context(**options), judge=judge)

    def df(self, groups: Mapping[str, Sequence[str]], **options: Any) -> pd.DataFrame:
        """`ask(groups).frame`, with the outcome's problems as warnings."""
        answers = self.ask(groups, **options)
        for message in answers.outcome.messages():
            warnings.warn(message, stacklevel=2)
        return answers.frame

    def plot(
        self, groups: Mapping[str, Sequence[str]], kind: str = "auto", **options: Any
    ) -> Figure:
        """Ask `groups` (like `df`) and draw the answers (`kind`: see `evals.plot`)."""
        from evals.plots import plot

        return plot(self, {g: list(m) for g, m in groups.items()}, kind, **options)

    def estimate(self, groups: Mapping[str, Sequence[str]], **options: Any) -> Estimate:
        """What `df()` would buy now (nothing is sent); `options` as for `ask`."""
        from evals.answers import estimate_question
        from evals.runner import run_context

        return estimate_question(self, groups, run_context(**options))


def insert_after_sample(frame: pd.DataFrame, columns: Mapping[str, Any]) -> pd.DataFrame:
    """`frame` with `columns` (replacing those of the same name) right after `sample_ix`."""
    import pandas as pd

    kept = frame.drop(columns=[c for c in columns if c in frame.columns])
    at = list(kept.columns).index("sample_ix") + 1 if "sample_ix" in kept.columns else 0
    before, after = kept.iloc[:, :at], kept.iloc[:, at:]
    added = pd.DataFrame(dict(columns), index=kept.index)
    return pd.concat([before, added, after], axis=1)


def _metric(name: str, spec: Any) -> Metric:
    if isinstance(spec, Metric):
        return spec if spec.name == name else replace(spec, name=name)
    if isinstance(spec, str):
        return Metric.parse(f"{name}: {spec}")
    return Metric.from_spec(name, spec)
