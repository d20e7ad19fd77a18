"""The lab's records: its jobs database, reading it, and the API's objects as rows."""

from labmgr.finetuning.registry.database import (
    LabDatabaseStatus,
    lab_database,
    lab_database_status,
    open_lab_database,
    upgrade_lab_database,
)
from labmgr.finetuning.registry.queries import (
    JOB_STATUSES,
    JobDetails,
    job_details,
    lab_jobs,
    lab_model_groups,
    lab_models,
    resolve_job_id,
    sentence,
)
from labmgr.finetuning.registry.records import (
    checkpoint_models,
    event_records,
    job_phase,
    job_record,
    timestamp,
)

__all__ = [
    "JOB_STATUSES",
    "JobDetails",
    "LabDatabaseStatus",
    "checkpoint_models",
    "event_records",
    "job_details",
    "job_phase",
    "job_record",
    "lab_database",
    "lab_database_status",
    "lab_jobs",
    "lab_model_groups",
    "lab_models",
    "open_lab_database",
    "resolve_job_id",
    "sentence",
    "timestamp",
    "upgrade_lab_database",
]
