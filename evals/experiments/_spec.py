"""`RunSpec`: what a run asks of whom, how it is judged and compared, what it may spend and how
it buys; validated once, written to `run.json` as it is, and handed down."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evals.errors import RunOptionsError
from evals.questions import Question
from evals.runner import ordered_models
from evals.runs import check_baseline, check_by
from evals.stats import DEFAULT_METHOD, DEFAULT_RESAMPLES, DEFAULT_SEED, Method, Metric


class RunSpec(BaseModel):
    """A run: questions × groups × samples, judges, statistics, budget and how to buy."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    questions: list[Question]
    """As asked: `samples` and `judge_model` already applied."""
    groups: dict[str, list[str]]
    samples: int | None = Field(default=None, ge=1)
    """Samples per paraphrase for every question (None: each question's own)."""
    judge: bool = True
    """False asks for the answers only (`score_run` judges them later)."""
    judge_model: str | None = None
    """Every judge asked of this model instead of its own."""
    metrics: list[Metric] = Field(default_factory=list)
    """Derived metrics added to every question with their scores."""
    baseline: str | dict[str, str] | None = None
    """The group every other is compared with (`comparisons.csv`), or each compared group's
    own (`{group: baseline}`)."""
    by: list[str] = Field(default_factory=list)
    """Grid factors that split the summary and comparisons."""
    method: Method = DEFAULT_METHOD
    resamples: int = Field(default=DEFAULT_RESAMPLES, ge=1)
    seed: int = DEFAULT_SEED
    by_model: bool = False
    """Also an interval per model (`summary_by_model.csv`)."""
    max_cost: float | None = Field(default=None, ge=0)
    """Dollars this run may spend, judges included (None: the run settings' limit)."""
    batch: bool = False
    """Buy through the Batch API: one round for every answer, one more for the judges."""
    batch_wait: bool = True
    """False submits the first round and returns (`labmgr batches collect` goes on)."""
    report: bool = True
    out: Path | None = None
    """The run folder (None: the lab's `runs/<time>-<first question>`)."""
    source: str | None = None
    """The question file the questions came from."""
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Facts per model written to run.json (job, kind, step, epoch)."""

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        questions = data.get("questions")
        if isinstance(questions, Mapping):
            data["questions"] = list(questions.values())
        groups = data.get("groups")
        if isinstance(groups, Mapping):
            ordered_models(groups)  # GroupsError for a malformed mapping
            data["groups"] = {str(g): [str(m) for m in ms] for g, ms in groups.items()}
        if data.get("models") is None:
            data["models"] = {}
        return data

    @model_validator(mode="after")
    def _check(self) -> RunSpec:
        if not self.questions:
            raise RunOptionsError("no questions to run")
        if self.samples is not None:
            self.questions = [
                q.model_copy(update={"samples_per_paraphrase": self.samples})
                for q in self.questions
            ]
        if self.judge_model is not None:
            self.questions = [q.with_judges(model=self.judge_model) for q in self.questions]
        columns = [set(question.score_columns()) for question in self.questions]
        for metric in self.metrics:
            if not any(metric.applies_to(have) for have in columns):
                known = ", ".join(sorted(set().union(*columns))) or "none"
                raise RunOptionsError(
                    f"metric {str(metric)!r}: no question of the run has the scores "
                    f"{' and '.join(metric.columns)} (their scores: {known})",
                    hint="Name scores the questions have (judge names, or 'answer' for a rating).",
                )
        check_baseline(self.baseline, self.groups)
        self.by = check_by(self.by, {q.name: list(q.factor_levels()) for q in self.questions})
        return self

    @classmethod
    def create(
        cls, questions: Mapping[str, Question] | Sequence[Question], groups: Any, **fields: Any
    ) -> RunSpec:
        """A spec from keywords; `RunOptionsError` names a field that is unknown or wrong."""
        metrics = fields.get("metrics")
        if metrics:  # texts read here, so that a bad one is named as `Metric.parse` names it
            fields["metrics"] = [m if isinstance(m, Metric) else Metric.parse(m) for m in metrics]
        try:
            return cls.model_validate({"questions": questions, "groups": groups, **fields})
        except ValidationError as error:
            hint = f"Options are RunSpec fields ({', '.join(cls.model_fields)})."
            raise RunOptionsError.of(error, hint=hint) from None

    def as_json(self) -> dict[str, Any]:
        """What run.json records of the spec (the questions are recorded on their own)."""
        return self.model_dump(mode="json", exclude={"questions", "models"})
