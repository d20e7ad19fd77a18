"""The run folder: what a run writes to disk, how it is read back, and how two runs compare
(nothing here asks a model or draws a figure)."""

from evals.errors import RunFolderError
from evals.runs._analysis import KEEP, Keep, analyze_run, check_baseline, check_by, write_run_file
from evals.runs._compare import compare_runs
from evals.runs._folder import COMPARISONS_FILE, REPORT_FILE, RUN_LOG, Run, load_run
from evals.runs._human import (
    HUMAN_PREFIX,
    LABELS_FILE,
    SAMPLE_KEYS,
    agreement_table,
    disagreements,
    id_key,
    sample_ids,
)
from evals.runs._samples_file import read_samples, write_samples
from evals.runs._writing import (
    endpoints_of,
    frame_totals,
    prepare_folder,
    rewrite_questions,
    utc_now,
    write_run,
)

__all__ = [
    "COMPARISONS_FILE",
    "HUMAN_PREFIX",
    "KEEP",
    "LABELS_FILE",
    "REPORT_FILE",
    "RUN_LOG",
    "SAMPLE_KEYS",
    "Keep",
    "Run",
    "RunFolderError",
    "agreement_table",
    "analyze_run",
    "check_baseline",
    "check_by",
    "compare_runs",
    "disagreements",
    "endpoints_of",
    "frame_totals",
    "id_key",
    "load_run",
    "prepare_folder",
    "read_samples",
    "rewrite_questions",
    "sample_ids",
    "utc_now",
    "write_run",
    "write_run_file",
    "write_samples",
]
