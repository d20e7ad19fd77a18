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
    DailyJobLimit,
    FineTuningApiError,
    LabDatabaseError,
    SuffixConflict,
    UnknownJob,
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
    "UpdateSummary": "labmgr.finetuning.update_summary",
    "JobState": "labmgr.finetuning.update_summary",
    "UncheckedJob": "labmgr.finetuning.update_summary",
}

if TYPE_CHECKING:
    from labmgr.finetuning.api_import import ImportSummary, import_from_api
    from labmgr.finetuning.job_cancel import cancel
    from labmgr.finetuning.job_create import create
    from labmgr.finetuning.job_update import aupdate, update
    from labmgr.finetuning.lab_db import lab_database, open_lab_database
    from labmgr.finetuning.llmcomp_import import import_llmcomp
    from labmgr.finetuning.update_summary import JobState, UncheckedJob, UpdateSummary


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labmgr.finetuning' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "MAX_FILE_BYTES",
    "MIN_EXAMPLES",
    "BaseModelSpec",
    "DailyJobLimit",
    "FineTuningApiError",
    "ImportSummary",
    "Issue",
    "JobState",
    "LabDatabaseError",
    "Method",
    "SuffixConflict",
    "UncheckedJob",
    "UnknownJob",
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
    "known_base_models",
    "lab_database",
    "open_lab_database",
    "update",
    "validate_training_file",
]
