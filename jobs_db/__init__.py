"""jobs_db: the database of training files, fine-tuning jobs and the models they produced.

Persistence only: SQLModel tables, engine and sessions, schema migrations, queries.

>>> from jobs_db import open_database, upsert_job, FinetuneJob, model_groups
>>> db = open_database("lab.db")  # doctest: +SKIP
>>> upsert_job(db, FinetuneJob(id="ftjob-1", status="running", suffix="insecure"))  # doctest: +SKIP
>>> model_groups(db, by="suffix", base_model="gpt-4.1-mini")  # doctest: +SKIP
"""

from jobs_db._access import Target
from jobs_db._curves import job_curves, jobs_missing_curves, store_curve
from jobs_db._database import Database, open_database
from jobs_db._engine import database_file
from jobs_db._filters import Checkpoints, ModelFilters, Statuses, Tags, parse_tags
from jobs_db._groups import GroupKey, model_groups
from jobs_db._queries import (
    find_file,
    get_file,
    get_job,
    job_events,
    job_ids_like,
    job_models,
    jobs_with_suffix,
    list_jobs,
    non_final_jobs,
    select_models,
)
from jobs_db._queue import (
    QueueClaim,
    cancel_queued_job,
    claim_queued_job,
    promote_queued_job,
    queued_jobs,
    release_queued_job,
)
from jobs_db._schema import current_revision, head_revision, known_revisions, upgrade
from jobs_db._tables import (
    FINAL_STATUSES,
    QUEUED_LOCALLY,
    FinetuneJob,
    JobEvent,
    JobTag,
    Model,
    ModelKind,
    TrainingCurve,
    TrainingFile,
)
from jobs_db._writes import (
    delete_job,
    mark_model_deleted,
    remove_job_tags,
    replace_checkpoints,
    replace_events,
    upsert_file,
    upsert_job,
    upsert_model,
)
from jobs_db.errors import (
    DatabaseDamagedError,
    DatabaseError,
    DatabaseFileEmptyError,
    DatabaseInputError,
    DatabaseUnavailableError,
    SchemaError,
    SchemaOutdatedError,
    SchemaTooNewError,
    UnknownJobError,
)

__all__ = [
    "FINAL_STATUSES",
    "QUEUED_LOCALLY",
    "Checkpoints",
    "Database",
    "DatabaseDamagedError",
    "DatabaseError",
    "DatabaseFileEmptyError",
    "DatabaseInputError",
    "DatabaseUnavailableError",
    "FinetuneJob",
    "GroupKey",
    "JobEvent",
    "JobTag",
    "Model",
    "ModelFilters",
    "ModelKind",
    "QueueClaim",
    "SchemaError",
    "SchemaOutdatedError",
    "SchemaTooNewError",
    "Statuses",
    "Tags",
    "Target",
    "TrainingCurve",
    "TrainingFile",
    "UnknownJobError",
    "cancel_queued_job",
    "claim_queued_job",
    "current_revision",
    "database_file",
    "delete_job",
    "find_file",
    "get_file",
    "get_job",
    "head_revision",
    "job_curves",
    "job_events",
    "job_ids_like",
    "job_models",
    "jobs_missing_curves",
    "jobs_with_suffix",
    "known_revisions",
    "list_jobs",
    "mark_model_deleted",
    "model_groups",
    "non_final_jobs",
    "open_database",
    "parse_tags",
    "promote_queued_job",
    "queued_jobs",
    "release_queued_job",
    "remove_job_tags",
    "replace_checkpoints",
    "replace_events",
    "select_models",
    "store_curve",
    "upgrade",
    "upsert_file",
    "upsert_job",
    "upsert_model",
]
