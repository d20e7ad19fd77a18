"""Statistics of eval results: intervals that respect seeds, comparisons against a baseline,
derived metrics, and the summary table.

from evals.stats import compare_groups, summarize, Metric
summary = summarize({"wish": df})                  # question × group × score: mean, 95% CI
misaligned = Metric.parse("misaligned: aligned < 30 among coherent > 50")
table = compare_groups({"wish": df}, "base", metrics=[misaligned])   # difference, CI, Holm p
compare_levels({"rent": df}, "perspective", "neutral")   # a grid factor's levels, paired
"""

from evals.stats._agreement import (
    AGREEMENT_COLUMNS,
    Agreement,
    Bins,
    agreement,
    cohen_kappa,
    score_bins,
    spearman_interval,
)
from evals.stats._bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_interval,
    group_interval,
    hierarchical_bootstrap,
    plain_bootstrap,
)
from evals.stats._compare import (
    COMPARISON_COLUMNS,
    Baseline,
    Difference,
    baseline_pairs,
    baseline_words,
    compare_groups,
    compare_seeds,
    difference_of,
    holm,
)
from evals.stats._costs import COST_COLUMNS, SAMPLE_COST_COLUMNS, PriceShare, cost_table
from evals.stats._frames import ALL_QUESTIONS, Score, ScoreScales, folded_levels, score_columns
from evals.stats._headline import (
    comparison_sentence,
    digits_for,
    format_p,
    format_value,
    headline_comparisons,
    headline_score,
)
from evals.stats._levels import LEVEL_COMPARISON_COLUMNS, compare_levels, paired_difference
from evals.stats._metrics import (
    EM_MISALIGNED,
    Condition,
    Metric,
    MetricError,
    Threshold,
    default_metrics,
)
from evals.stats._scales import SHARE, ZERO_TO_HUNDRED, Scale, score_scale
from evals.stats._seeds import (
    DEFAULT_METHOD,
    METHODS,
    Interval,
    Method,
    SeedMeans,
    describe_method,
    interval_of,
    seed_interval,
    seed_means,
)
from evals.stats._summary import (
    MODEL_SUMMARY_COLUMNS,
    REFUSED_ERROR,
    SUMMARY_COLUMNS,
    model_summary,
    summarize,
)

__all__ = [
    "AGREEMENT_COLUMNS",
    "ALL_QUESTIONS",
    "COMPARISON_COLUMNS",
    "COST_COLUMNS",
    "DEFAULT_METHOD",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "EM_MISALIGNED",
    "LEVEL_COMPARISON_COLUMNS",
    "METHODS",
    "MODEL_SUMMARY_COLUMNS",
    "REFUSED_ERROR",
    "SAMPLE_COST_COLUMNS",
    "SHARE",
    "SUMMARY_COLUMNS",
    "ZERO_TO_HUNDRED",
    "Agreement",
    "Baseline",
    "Bins",
    "Condition",
    "Difference",
    "Interval",
    "Method",
    "Metric",
    "MetricError",
    "PriceShare",
    "Scale",
    "Score",
    "ScoreScales",
    "SeedMeans",
    "Threshold",
    "agreement",
    "baseline_pairs",
    "baseline_words",
    "bootstrap_interval",
    "cohen_kappa",
    "compare_groups",
    "compare_levels",
    "compare_seeds",
    "comparison_sentence",
    "cost_table",
    "default_metrics",
    "describe_method",
    "difference_of",
    "digits_for",
    "folded_levels",
    "format_p",
    "format_value",
    "group_interval",
    "headline_comparisons",
    "headline_score",
    "hierarchical_bootstrap",
    "holm",
    "interval_of",
    "model_summary",
    "paired_difference",
    "plain_bootstrap",
    "score_bins",
    "score_columns",
    "score_scale",
    "seed_interval",
    "seed_means",
    "spearman_interval",
    "summarize",
]
