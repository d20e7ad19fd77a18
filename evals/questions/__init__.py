"""Questions: what is asked of every model (paraphrases or conversations, how often), the five
types and how each reads its answer back, judges and their templates, and YAML loading in
llmcomp's and Emergent Misalignment's dialects.

from evals.questions import Question, load_questions
q = Question.create(type="rating", name="cats", paraphrases=["…"], samples_per_paraphrase=5)
df = q.df({"base": ["gpt-4.1-mini"]})     # an entry: the run context is built here
questions = load_questions("questions.yaml")

Instead of paraphrases, a question may give a `grid` of factors and a `template`: every
combination of levels is one prompt, and each row of its frame carries the levels as columns.

A question is the top layer of evals: `df`, `ask`, `plot` and `estimate` call down into
`evals.answers`, `evals.runner` and `evals.plots`, which know a question only by the methods
and attributes it carries (`read_answer`, `extra_columns`, `score_columns`, `judge_questions`).
"""

from evals.errors import QuestionError, QuestionFileError
from evals.questions._base import AnswerKind, Question, explain_validation_error
from evals.questions._grid import RESERVED_COLUMNS, GridOption
from evals.questions._loading import load_questions
from evals.questions._templates import render_placeholders, render_template, template_fields
from evals.questions._types import (
    FORBIDDEN_JUDGE_NAMES,
    QUESTION_TYPES,
    AnyJudge,
    FreeForm,
    FreeFormJudge,
    NextToken,
    QuestionType,
    Rating,
    RatingJudge,
)

__all__ = [
    "FORBIDDEN_JUDGE_NAMES",
    "QUESTION_TYPES",
    "RESERVED_COLUMNS",
    "AnswerKind",
    "AnyJudge",
    "FreeForm",
    "FreeFormJudge",
    "GridOption",
    "NextToken",
    "Question",
    "QuestionError",
    "QuestionFileError",
    "QuestionType",
    "Rating",
    "RatingJudge",
    "explain_validation_error",
    "load_questions",
    "render_placeholders",
    "render_template",
    "template_fields",
]
