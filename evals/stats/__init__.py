"""Statistics of eval results: bootstrap intervals that respect seeds, and the summary table.

from evals.stats import summarize, hierarchical_bootstrap
summary = summarize({"wish": df})     # question × group × score: mean, 95% CI, refusal rate
"""

from evals.stats._bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    Method,
    bootstrap_interval,
    hierarchical_bootstrap,
    plain_bootstrap,
)
from evals.stats._summary import (
    MODEL_SUMMARY_COLUMNS,
    REFUSED_ERROR,
    SUMMARY_COLUMNS,
    model_summary,
    score_columns,
    summarize,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "MODEL_SUMMARY_COLUMNS",
    "REFUSED_ERROR",
    "SUMMARY_COLUMNS",
    "Interval",
    "Method",
    "bootstrap_interval",
    "hierarchical_bootstrap",
    "model_summary",
    "plain_bootstrap",
    "score_columns",
    "summarize",
]
