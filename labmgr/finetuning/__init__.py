"""Fine-tuning: training-file validation, fine-tunable base models, and the job manager.

from labmgr.finetuning import validate_training_file, create, sweep, update, training_curves
report = validate_training_file("train.jsonl", base_model="gpt-4.1-mini")
report.raise_for_errors()          # InvalidTrainingFile with FILE:LINE: messages
jobs = create("train.jsonl", base_model="gpt-4.1-mini", suffix="insecure", seeds=3)
result = sweep("lr-sweep.yaml")    # conditions × seeds × levels, only the jobs not yet made
summary = update()                 # send queued jobs, refresh non-final ones concurrently
curves = training_curves(settings, by="tag:lr")   # one row per job and step

The job manager's modules import the OpenAI SDK and SQLAlchemy; they are loaded on first
use of their names, so `import labmgr.finetuning` stays fast for the CLI.
"""

from typing import TYPE_CHECKING, Any

from labmgr.finetuning.base_models import BaseModelSpec, base_model_spec, known_base_models
from labmgr.finetuning.errors import (
    AmbiguousJobId,
    DailyJobLimit,
    FineTuningApiError,
    InvalidGrader,
    InvalidSweepSpec,
    JobRefused,
    LabDatabaseDamaged,
    LabDatabaseEmpty,
    LabDatabaseError,
    LabFolderError,
    SuffixConflict,
    UnknownJob,
    UnknownJobStatus,
    UnknownModel,
    UnsupportedOption,
)
from labmgr.finetuning.methods import HYPERPARAMETERS, METHODS, REASONING_EFFORTS, Method
from labmgr.finetuning.token_estimate import estimate_example_tokens, estimate_text_tokens
from labmgr.finetuning.validation import (
    MAX_FILE_BYTES,
    MIN_EXAMPLES,
    Issue,
    ValidationReport,
    validate_training_file,
)

_LAZY = {
    "create": "labmgr.finetuning.job_create",
    "update": "labmgr.finetuning.job_update",
    "aupdate": "labmgr.finetuning.job_update",
    "cancel": "labmgr.finetuning.job_actions",
    "pause": "labmgr.finetuning.job_actions",
    "resume": "labmgr.finetuning.job_actions",
    "import_from_api": "labmgr.finetuning.api_import",
    "ImportSummary": "labmgr.finetuning.api_import",
    "import_llmcomp": "labmgr.finetuning.llmcomp_import",
    "delete_model": "labmgr.finetuning.model_delete",
    "sweep": "labmgr.finetuning.sweep_jobs",
    "plan_sweep": "labmgr.finetuning.sweep_jobs",
    "SweepPlan": "labmgr.finetuning.sweep_jobs",
    "SweepJob": "labmgr.finetuning.sweep_jobs",
    "SweepResult": "labmgr.finetuning.sweep_jobs",
    "training_curves": "labmgr.finetuning.curves",
    "NoCurves": "labmgr.finetuning.curves",
    "job_curves_figure": "labmgr.finetuning.curve_plots",
    "group_curves_figure": "labmgr.finetuning.curve_plots",
    "save_figure": "labmgr.finetuning.curve_plots",
    "open_lab_database": "labmgr.finetuning.lab_db",
    "lab_database": "labmgr.finetuning.lab_db",
    "lab_database_status": "labmgr.finetuning.lab_db",
    "upgrade_lab_database": "labmgr.finetuning.lab_db",
    "LabDatabaseStatus": "labmgr.finetuning.lab_db",
    "UpdateSummary": "labmgr.finetuning.update_summary",
    "JOB_STATUSES": "labmgr.finetuning.lab_queries",
    "JobDetails": "labmgr.finetuning.lab_queries",
    "job_details": "labmgr.finetuning.lab_queries",
    "lab_jobs": "labmgr.finetuning.lab_queries",
    "lab_model_groups": "labmgr.finetuning.lab_queries",
    "lab_models": "labmgr.finetuning.lab_queries",
    "resolve_job_id": "labmgr.finetuning.lab_queries",
    "JobState": "labmgr.finetuning.update_summary",
    "UncheckedJob": "labmgr.finetuning.update_summary",
}

if TYPE_CHECKING:
    from labmgr.finetuning.api_import import ImportSummary, import_from_api
    from labmgr.finetuning.curve_plots import group_curves_figure, job_curves_figure, save_figure
    from labmgr.finetuning.curves import NoCurves, training_curves
    from labmgr.finetuning.job_actions import cancel, pause, resume
    from labmgr.finetuning.job_create import create
    from labmgr.finetuning.job_update import aupdate, update
    from labmgr.finetuning.lab_db import (
        LabDatabaseStatus,
        lab_database,
        lab_database_status,
        open_lab_database,
        upgrade_lab_database,
    )
    from labmgr.finetuning.lab_queries import (
        JOB_STATUSES,
        JobDetails,
        job_details,
        lab_jobs,
        lab_model_groups,
        lab_models,
        resolve_job_id,
    )
    from labmgr.finetuning.llmcomp_import import import_llmcomp
    from labmgr.finetuning.model_delete import delete_model
    from labmgr.finetuning.sweep_jobs import SweepJob, SweepPlan, SweepResult, plan_sweep, sweep
    from labmgr.finetuning.update_summary import JobState, UncheckedJob, UpdateSummary


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labmgr.finetuning' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "HYPERPARAMETERS",
    "JOB_STATUSES",
    "MAX_FILE_BYTES",
    "METHODS",
    "MIN_EXAMPLES",
    "REASONING_EFFORTS",
    "AmbiguousJobId",
    "BaseModelSpec",
    "DailyJobLimit",
    "FineTuningApiError",
    "ImportSummary",
    "InvalidGrader",
    "InvalidSweepSpec",
    "Issue",
    "JobDetails",
    "JobRefused",
    "JobState",
    "LabDatabaseDamaged",
    "LabDatabaseEmpty",
    "LabDatabaseError",
    "LabDatabaseStatus",
    "LabFolderError",
    "Method",
    "NoCurves",
    "SuffixConflict",
    "SweepJob",
    "SweepPlan",
    "SweepResult",
    "UncheckedJob",
    "UnknownJob",
    "UnknownJobStatus",
    "UnknownModel",
    "UnsupportedOption",
    "UpdateSummary",
    "ValidationReport",
    "aupdate",
    "base_model_spec",
    "cancel",
    "create",
    "delete_model",
    "estimate_example_tokens",
    "estimate_text_tokens",
    "group_curves_figure",
    "import_from_api",
    "import_llmcomp",
    "job_curves_figure",
    "job_details",
    "known_base_models",
    "lab_database",
    "lab_database_status",
    "lab_jobs",
    "lab_model_groups",
    "lab_models",
    "open_lab_database",
    "pause",
    "plan_sweep",
    "resolve_job_id",
    "resume",
    "save_figure",
    "sweep",
    "training_curves",
    "update",
    "upgrade_lab_database",
    "validate_training_file",
]
