"""Fine-tuning: training-file validation, fine-tunable base models, and the job manager.

from labmgr.finetuning import validate_training_file, create, update
report = validate_training_file("train.jsonl", base_model="gpt-4.1-mini")
report.raise_for_errors()          # InvalidTrainingFile with FILE:LINE: messages
jobs = create("train.jsonl", base_model="gpt-4.1-mini", suffix="insecure", seeds=3)
summary = update()                 # refresh non-final jobs concurrently

The job manager's modules import the OpenAI SDK and SQLAlchemy; they are loaded on first
use of their names, so `import labmgr.finetuning` stays fast for the CLI.
"""

from typing import TYPE_CHECKING, Any

from labmgr.finetuning.base_models import BaseModelSpec, base_model_spec, known_base_models
from labmgr.finetuning.errors import (
    AmbiguousJobId,
    DailyJobLimit,
    FineTuningApiError,
    LabDatabaseDamaged,
    LabDatabaseEmpty,
    LabDatabaseError,
    LabFolderError,
    SuffixConflict,
    UnknownJob,
    UnknownJobStatus,
)
from labmgr.finetuning.token_estimate import estimate_example_tokens, estimate_text_tokens
from labmgr.finetuning.validation import (
    MAX_FILE_BYTES,
    MIN_EXAMPLES,
    Issue,
    Method,
    ValidationReport,
    validate_training_file,
)

_LAZY = {
    "create": "labmgr.finetuning.job_create",
    "update": "labmgr.finetuning.job_update",
    "aupdate": "labmgr.finetuning.job_update",
    "cancel": "labmgr.finetuning.job_cancel",
    "import_from_api": "labmgr.finetuning.api_import",
    "ImportSummary": "labmgr.finetuning.api_import",
    "import_llmcomp": "labmgr.finetuning.llmcomp_import",
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
    from labmgr.finetuning.job_cancel import cancel
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
    from labmgr.finetuning.update_summary import JobState, UncheckedJob, UpdateSummary


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labmgr.finetuning' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "JOB_STATUSES",
    "MAX_FILE_BYTES",
    "MIN_EXAMPLES",
    "AmbiguousJobId",
    "BaseModelSpec",
    "DailyJobLimit",
    "FineTuningApiError",
    "ImportSummary",
    "Issue",
    "JobDetails",
    "JobState",
    "LabDatabaseDamaged",
    "LabDatabaseEmpty",
    "LabDatabaseError",
    "LabDatabaseStatus",
    "LabFolderError",
    "Method",
    "SuffixConflict",
    "UncheckedJob",
    "UnknownJob",
    "UnknownJobStatus",
    "UpdateSummary",
    "ValidationReport",
    "aupdate",
    "base_model_spec",
    "cancel",
    "create",
    "estimate_example_tokens",
    "estimate_text_tokens",
    "import_from_api",
    "import_llmcomp",
    "job_details",
    "known_base_models",
    "lab_database",
    "lab_database_status",
    "lab_jobs",
    "lab_model_groups",
    "lab_models",
    "open_lab_database",
    "resolve_job_id",
    "update",
    "upgrade_lab_database",
    "validate_training_file",
]
