"""The lab's records: its jobs database, reading it, and the API's objects as rows."""

from labmgr.finetuning.registry.database import (
    lab_database,
    lab_database_status,
    upgrade_lab_database,
)
from labmgr.finetuning.registry.queries import (
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
    provided_suffix,
    timestamp,
)

__all__ = [
    "JobDetails",
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
    "provided_suffix",
    "resolve_job_id",
    "sentence",
    "timestamp",
    "upgrade_lab_database",
]
