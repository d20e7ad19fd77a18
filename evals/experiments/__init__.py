"""Experiments: ask questions of model groups into a run folder with its report, estimate a
run, judge or report a run again, follow a score over runs."""

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
