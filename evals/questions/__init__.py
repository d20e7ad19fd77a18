"""Questions: what is asked of every model, the types and how each reads its answer back,
right answers, judges and their templates, and YAML loading (docs/concepts.md). The layers
below know a question only through the `Askable` and `Judge` protocols of `evals.runner`."""

from evals.errors import QuestionError, QuestionFileError
from evals.questions._base import Question
from evals.questions._choices import MultipleChoice
from evals.questions._dataset import read_rows
from evals.questions._lm_eval import lm_eval_questions
from evals.questions._loading import load_questions
from evals.questions._templates import render_template, template_fields
from evals.questions._types import FreeForm, FreeFormJudge, NextToken, Rating, RatingJudge

__all__ = [
    "FreeForm",
    "FreeFormJudge",
    "MultipleChoice",
    "NextToken",
    "Question",
    "QuestionError",
    "QuestionFileError",
    "Rating",
    "RatingJudge",
    "lm_eval_questions",
    "load_questions",
    "read_rows",
    "render_template",
    "template_fields",
]
