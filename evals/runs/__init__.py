"""Eval runs on disk: run questions over model groups into a folder, read it back, compare.

from evals.runs import run_questions, load_run, compare_runs
run = run_questions(load_questions("questions.yaml"), {"base": ["gpt-4.1-mini"]})
run.summary          # question × group × score: mean, 95% CI, refusal rate
compare_runs("runs/a", "runs/b").query("status == 'moved'")
"""

from evals.runs._compare import COMPARISON_COLUMNS, compare_runs
from evals.runs._database import groups_from_database
from evals.runs._execute import default_run_dir, run_questions
from evals.runs._folder import (
    MODEL_SUMMARY_FILE,
    REPORT_FILE,
    RUN_FILE,
    RUN_LOG,
    SUMMARY_FILE,
    Run,
    RunFolderError,
    load_run,
)
from evals.runs._samples_file import read_samples, write_samples
from evals.runs._writing import write_run

__all__ = [
    "COMPARISON_COLUMNS",
    "MODEL_SUMMARY_FILE",
    "REPORT_FILE",
    "RUN_FILE",
    "RUN_LOG",
    "SUMMARY_FILE",
    "Run",
    "RunFolderError",
    "compare_runs",
    "default_run_dir",
    "groups_from_database",
    "load_run",
    "read_samples",
    "run_questions",
    "write_run",
    "write_samples",
]
