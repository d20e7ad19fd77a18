"""The run folder format: what a run writes to disk, how it is read back, and how two runs
compare. Nothing here asks a model or draws a figure (`evals.experiments` runs questions into
a folder; `evals.report` renders a folder).

from evals.runs import load_run, compare_runs
run = load_run("runs/20250101-120000-wish")
run.summary          # question × group × score: mean, 95% CI, refusal rate
run.samples("wish")  # the frame `q.df(groups)` returned
compare_runs("runs/a", "runs/b").query("status == 'moved'")
"""

from evals.errors import RunFolderError
from evals.runs._compare import COMPARISON_COLUMNS, compare_runs
from evals.runs._folder import (
    CURVES_FILE,
    MODEL_SUMMARY_FILE,
    REPORT_FILE,
    RUN_FILE,
    RUN_LOG,
    SAMPLES_DIR,
    SUMMARY_FILE,
    Run,
    load_run,
)
from evals.runs._provenance import endpoints_of, package_versions, utc_now
from evals.runs._samples_file import read_samples, write_samples
from evals.runs._writing import frame_totals, prepare_folder, write_run

__all__ = [
    "COMPARISON_COLUMNS",
    "CURVES_FILE",
    "MODEL_SUMMARY_FILE",
    "REPORT_FILE",
    "RUN_FILE",
    "RUN_LOG",
    "SAMPLES_DIR",
    "SUMMARY_FILE",
    "Run",
    "RunFolderError",
    "compare_runs",
    "endpoints_of",
    "frame_totals",
    "load_run",
    "package_versions",
    "prepare_folder",
    "read_samples",
    "utc_now",
    "write_run",
    "write_samples",
]
