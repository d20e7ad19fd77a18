"""Experiments: the orchestration above the run folder and the report — ask questions of model
groups into a run folder, write its report, estimate what a run would buy, report a run again
against another baseline.

from evals.experiments import report_run, run_questions
run = run_questions(load_questions("questions.yaml"), groups, baseline="gpt-4.1-mini", lab=lab)
run.summary          # question × group × score and metric: mean, 95% CI, refusal rate
run.comparisons      # each group against the baseline: difference, 95% CI, Holm-adjusted p
report_run(run.path, baseline="helpful", figure_folder="figures")   # no requests
"""

from evals.experiments._estimating import estimate_run
from evals.experiments._reporting import ReportFiles, report_run
from evals.experiments._running import default_run_dir, run_metrics, run_questions
from evals.experiments._writing import write_run

__all__ = [
    "ReportFiles",
    "default_run_dir",
    "estimate_run",
    "report_run",
    "run_metrics",
    "run_questions",
    "write_run",
]
