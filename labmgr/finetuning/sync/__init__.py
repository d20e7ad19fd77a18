"""Keeping the lab's registry in step with the API: `update`, and importing jobs made
elsewhere (from the API's job lists, or from an llmcomp registry)."""

from labmgr.finetuning.sync.api_import import ImportSummary, import_from_api
from labmgr.finetuning.sync.llmcomp_import import import_llmcomp
from labmgr.finetuning.sync.summary import (
    SAFETY_CHECK_ALLOWANCE,
    JobState,
    QueuedJobState,
    SubmittedJob,
    UncheckedJob,
    UpdateSummary,
)
from labmgr.finetuning.sync.update import aupdate, update

__all__ = [
    "SAFETY_CHECK_ALLOWANCE",
    "ImportSummary",
    "JobState",
    "QueuedJobState",
    "SubmittedJob",
    "UncheckedJob",
    "UpdateSummary",
    "aupdate",
    "import_from_api",
    "import_llmcomp",
    "update",
]
