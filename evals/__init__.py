"""evals: questions asked of model groups, cached runs, statistics, figures and reports
(the packages behind this face: docs/design/architecture.md)."""

import importlib
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
    MultipleChoice,
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
    "MultipleChoice",
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

_LAZY = {
    "plot": "evals.plots",
    "write_run": "evals.runs",
    **dict.fromkeys(
        ("RunSpec", "estimate_run", "report_run", "run", "run_questions"), "evals.experiments"
    ),
}


def __getattr__(name: str) -> Any:
    # matplotlib and seaborn, the run folder and the report load on first use only.
    if name not in _LAZY:
        raise AttributeError(f"module 'evals' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
