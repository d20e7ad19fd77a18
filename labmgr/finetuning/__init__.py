"""Fine-tuning: training-file validation, fine-tunable base models, and the job manager.

from labmgr.finetuning import validate_training_file, create, sweep, update, training_curves
report = validate_training_file("train.jsonl", base_model="gpt-4.1-mini")
report.raise_for_errors()          # InvalidTrainingFile with FILE:LINE: messages
jobs = create("train.jsonl", base_model="gpt-4.1-mini", suffix="insecure", seeds=3)
result = sweep("lr-sweep.yaml")    # conditions × seeds × levels, only the jobs not yet made
summary = update()                 # send queued jobs, refresh non-final ones concurrently
curves = training_curves(settings, by="tag:lr")   # one row per job and step

The parts behind this face: `training_data` (validation), `jobs` (creating and acting on
jobs, the local queue at the daily limit), `sweeps`, `sync` (`update`, imports), `curves`,
`registry` (the lab's database). All but validation import the OpenAI SDK and SQLAlchemy,
so they are loaded on first use of their names: `import labmgr.finetuning` stays fast.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

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
from labmgr.finetuning.methods import (
    HYPERPARAMETERS,
    METHODS,
    REASONING_EFFORTS,
    BaseModelSpec,
    Method,
    base_model_spec,
    known_base_models,
)
from labmgr.finetuning.training_data import (
    MAX_FILE_BYTES,
    MIN_EXAMPLES,
    Issue,
    ValidationReport,
    estimate_example_tokens,
    estimate_text_tokens,
    validate_training_file,
)

if TYPE_CHECKING:
    from labmgr.finetuning.curves import (
        NoCurves,
        group_curves_figure,
        job_curves_figure,
        save_figure,
        training_curves,
    )
    from labmgr.finetuning.jobs import cancel, create, delete_model, pause, resume
    from labmgr.finetuning.registry import (
        JOB_STATUSES,
        JobDetails,
        LabDatabaseStatus,
        job_details,
        lab_database,
        lab_database_status,
        lab_jobs,
        lab_model_groups,
        lab_models,
        open_lab_database,
        resolve_job_id,
        upgrade_lab_database,
    )
    from labmgr.finetuning.sweeps import SweepJob, SweepPlan, SweepResult, plan_sweep, sweep
    from labmgr.finetuning.sync import (
        ImportSummary,
        JobState,
        UncheckedJob,
        UpdateSummary,
        aupdate,
        import_from_api,
        import_llmcomp,
        update,
    )

_LAZY = {
    "curves": "NoCurves group_curves_figure job_curves_figure save_figure training_curves",
    "jobs": "cancel create delete_model pause resume",
    "registry": "JOB_STATUSES JobDetails LabDatabaseStatus job_details lab_database "
    "lab_database_status lab_jobs lab_model_groups lab_models open_lab_database "
    "resolve_job_id upgrade_lab_database",
    "sweeps": "SweepJob SweepPlan SweepResult plan_sweep sweep",
    "sync": "ImportSummary JobState UncheckedJob UpdateSummary aupdate import_from_api "
    "import_llmcomp update",
}
_PART_OF = {name: part for part, names in _LAZY.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    part = _PART_OF.get(name)
    if part is None:
        raise AttributeError(f"module 'labmgr.finetuning' has no attribute {name!r}")
    return getattr(import_module(f"labmgr.finetuning.{part}"), name)


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
