"""Experiments: ask questions of model groups into a run folder with its report, estimate a
run, judge or report a run again, follow a score over runs.

from evals.experiments import report_run, run_questions
run = run_questions(load_questions("questions.yaml"), groups, baseline="gpt-4.1-mini", lab=lab)
run.summary          # question × group × score and metric: mean, 95% CI, refusal rate
run.comparisons      # each group against the baseline: difference, 95% CI, Holm-adjusted p
report_run(run.path, baseline="helpful", figure_folder="figures")   # no requests
score_run(run.path, judge_model="gpt-4.1")   # judge the answers again: judge requests only
run_history(["runs/a", "runs/b"], "misaligned", out="trend.png")   # a score over runs
"""

from evals.experiments._history import HISTORY_COLUMNS, History, run_history, runs_of_questions
from evals.experiments._reporting import ReportFiles, report_run
from evals.experiments._running import default_run_dir, estimate_run, run, run_questions
from evals.experiments._scoring import ScoredRun, score_run
from evals.experiments._spec import RunSpec

__all__ = [
    "HISTORY_COLUMNS",
    "History",
    "ReportFiles",
    "RunSpec",
    "ScoredRun",
    "default_run_dir",
    "estimate_run",
    "report_run",
    "run",
    "run_history",
    "run_questions",
    "runs_of_questions",
    "score_run",
]
