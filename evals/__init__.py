"""evals: questions asked of model groups, cached runs, statistics, figures and reports.

from evals import Question, load_questions, groups
q = Question.create(type="free_form", name="wish", paraphrases=["…"], samples_per_paraphrase=10)
df = q.df({"base": ["gpt-4.1-mini"], "tuned": ["ft:gpt-4.1-mini:…"]})

The rooms behind this face (see docs/design/architecture.md): `questions` (types, judges,
YAML), `answers` (the per-sample frame, judging, estimates), `runner` (routing, settings,
request parameters per model, the async engine), `cache`, `adapters` (per-model request
hooks), `stats`, `plots`, `runs` (the run folder), `report` (its HTML page), `experiments`
(`run_questions`: runs written with their report), `groups`, `errors`.
"""

from typing import TYPE_CHECKING, Any

from evals import adapters, groups
from evals.answers import Answers, Estimate
from evals.cache import Cache, CacheInfo, CacheStats
from evals.errors import (
    CacheError,
    EvalsError,
    GroupsError,
    MetricError,
    NoEndpointError,
    OutputError,
    QuestionError,
    QuestionFileError,
    RunFolderError,
    RunOptionsError,
    RunStopped,
    UnknownModelError,
    UnsupportedRequestError,
)
from evals.groups import groups_from_database
from evals.questions import (
    FreeForm,
    FreeFormJudge,
    NextToken,
    Question,
    Rating,
    RatingJudge,
    load_questions,
)
from evals.runner import (
    ClientRouter,
    Endpoint,
    EnvRouter,
    LabRouter,
    RunContext,
    RunOutcome,
    RunSettings,
    run_context,
)

if TYPE_CHECKING:
    from evals.experiments import RunSpec, estimate_run, report_run, run, run_questions
    from evals.plots import plot
    from evals.runs import write_run

__all__ = [
    "Answers",
    "Cache",
    "CacheError",
    "CacheInfo",
    "CacheStats",
    "ClientRouter",
    "Endpoint",
    "EnvRouter",
    "Estimate",
    "EvalsError",
    "FreeForm",
    "FreeFormJudge",
    "GroupsError",
    "LabRouter",
    "MetricError",
    "NextToken",
    "NoEndpointError",
    "OutputError",
    "Question",
    "QuestionError",
    "QuestionFileError",
    "Rating",
    "RatingJudge",
    "RunContext",
    "RunFolderError",
    "RunOptionsError",
    "RunOutcome",
    "RunSettings",
    "RunSpec",
    "RunStopped",
    "UnknownModelError",
    "UnsupportedRequestError",
    "adapters",
    "estimate_run",
    "groups",
    "groups_from_database",
    "load_questions",
    "plot",
    "report_run",
    "run",
    "run_context",
    "run_questions",
    "write_run",
]

_EXPERIMENTS = frozenset({"RunSpec", "estimate_run", "report_run", "run", "run_questions"})


def __getattr__(name: str) -> Any:
    # `plot` imports matplotlib and seaborn, and the experiments the run folder and report,
    # so they are loaded on first use only.
    if name == "plot":
        from evals.plots import plot

        return plot
    if name in _EXPERIMENTS:
        from evals import experiments

        return getattr(experiments, name)
    if name == "write_run":  # frames a notebook holds into a run folder (`report_run` draws it)
        from evals.runs import write_run

        return write_run
    raise AttributeError(f"module 'evals' has no attribute {name!r}")
