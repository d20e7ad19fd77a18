"""evals: questions asked of model groups, cached runs, statistics, figures and reports.

from evals import Question, load_questions, groups
q = Question.create(type="free_form", name="wish", paraphrases=["…"], samples_per_paraphrase=10)
df = q.df({"base": ["gpt-4.1-mini"], "tuned": ["ft:gpt-4.1-mini:…"]})
"""

from evals import groups
from evals.cache import Cache, CacheInfo, CacheStats
from evals.estimate import Estimate
from evals.lab import LabRouter
from evals.loading import QuestionFileError, load_questions
from evals.question import Question, QuestionError
from evals.question_types import FreeForm, FreeFormJudge, NextToken, Rating, RatingJudge
from evals.routing import ClientRouter, Endpoint, EnvRouter, NoEndpointError
from evals.settings import RunSettings

__all__ = [
    "Cache",
    "CacheInfo",
    "CacheStats",
    "ClientRouter",
    "Endpoint",
    "EnvRouter",
    "Estimate",
    "FreeForm",
    "FreeFormJudge",
    "LabRouter",
    "NextToken",
    "NoEndpointError",
    "Question",
    "QuestionError",
    "QuestionFileError",
    "Rating",
    "RatingJudge",
    "RunSettings",
    "groups",
    "load_questions",
    "plot",
]


def __getattr__(name: str) -> object:
    # `plot` imports matplotlib and seaborn, so it is loaded on first use only.
    if name == "plot":
        from evals.plots import plot

        return plot
    raise AttributeError(f"module 'evals' has no attribute {name!r}")
