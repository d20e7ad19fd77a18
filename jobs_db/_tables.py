"""The SQLModel tables: training files, fine-tuning jobs and their tags and events, models.

Only fields a person or the job manager sets; no API key is ever stored, only the *name* of
the environment variable that holds it (``key_env``).
"""

from datetime import datetime
from typing import Any, ClassVar, Literal

from sqlalchemy import JSON, CheckConstraint, Column, ForeignKey, Index, MetaData, String
from sqlmodel import Field, Relationship, SQLModel

from jobs_db._types import UTCDateTime

ModelKind = Literal["final", "checkpoint", "base"]
"""What a model row is: a job's final model, one of its checkpoints, or a base model."""

FINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
"""Job statuses that never change again. Every other string (``"paused"`` too) is non-final."""

QUEUED_LOCALLY = "queued_locally"
"""Status of a job labmgr holds back until the organization's daily job limit frees a slot.

Such a job is not on the API yet: its id is labmgr's own (``queued-…``), its files are
uploaded and its ``create_request`` holds the body to send; ``not_before`` says when it
may go. Once submitted, its row is replaced by the API's job (see ``promote_queued_job``).
"""


def _time(*, index: bool = False) -> Any:
    return Field(default=None, sa_column=Column(UTCDateTime(), index=index, nullable=True))


def _json() -> Any:
    return Field(default=None, sa_column=Column(JSON, nullable=True))


class TableBase(SQLModel):
    """Base of every jobs_db table; they share their own metadata, separate from other code."""

    metadata: ClassVar[MetaData] = MetaData()


class TrainingFile(TableBase, table=True):
    """A file uploaded to an endpoint for fine-tuning (one row per uploaded copy)."""

    __tablename__ = "training_files"
    __table_args__ = (Index("ix_training_files_md5_owner", "md5", "organization_id", "project_id"),)

    id: str = Field(primary_key=True)
    """The API's file id, e.g. ``file-abc123``."""
    organization_id: str | None = None
    project_id: str | None = None
    key_env: str | None = None
    """Name of the environment variable holding the key it was uploaded with (never the key)."""
    endpoint: str | None = None
    """Base URL of the API it lives on, e.g. ``https://api.openai.com/v1``."""
    local_path: str | None = None
    filename: str | None = None
    md5: str | None = None
    size_bytes: int | None = None
    num_examples: int | None = None
    purpose: str | None = None
    created_at: datetime | None = _time()
    """When the API says the file was created."""
    uploaded_at: datetime | None = _time()
    """When this lab uploaded (or first recorded) it."""


class FinetuneJob(TableBase, table=True):
    """A fine-tuning job, as requested and as last seen on the API."""

    __tablename__ = "finetune_jobs"
    __table_args__ = (Index("ix_finetune_jobs_owner", "organization_id", "project_id"),)

    id: str = Field(primary_key=True)
    """The API's job id, e.g. ``ftjob-abc123``."""
    organization_id: str | None = None
    project_id: str | None = None
    key_env: str | None = None
    """Name of the environment variable holding the key that owns the job (never the key)."""
    endpoint: str | None = None
    base_model: str | None = Field(default=None, index=True)
    """The base model as requested, e.g. ``gpt-4.1-mini``."""
    resolved_base_model: str | None = None
    """The base model the API reports, e.g. ``gpt-4.1-mini-2025-04-14``."""
    suffix: str | None = Field(default=None, index=True)
    training_file_id: str | None = None
    validation_file_id: str | None = None
    method: str | None = None
    """``supervised``, ``dpo`` or ``reinforcement``."""
    hyperparameters_requested: dict[str, Any] | None = _json()
    """As sent, ``"auto"`` included, e.g. ``{"n_epochs": "auto", "batch_size": 4}``."""
    hyperparameters_actual: dict[str, Any] | None = _json()
    """As resolved by the API once the job runs."""
    seed_requested: int | None = None
    seed: int | None = None
    """The seed the API actually used."""
    status: str = Field(index=True)
    """The raw API status string; values outside the documented six (``paused``) are kept."""
    error_code: str | None = None
    error_message: str | None = None
    error_param: str | None = None
    estimated_finish: datetime | None = _time()
    phase: str | None = None
    """What the job is doing per its events, e.g. ``usage policy evaluation``."""
    trained_tokens: int | None = None
    fine_tuned_model: str | None = None
    created_at: datetime | None = _time(index=True)
    finished_at: datetime | None = _time()
    refreshed_at: datetime | None = _time()
    """When this row was last brought up to date from the API; stale snapshots never win."""
    api_metadata: dict[str, str] | None = _json()
    """The ``metadata`` sent to the API with the job."""
    create_request: dict[str, Any] | None = _json()
    """The ``jobs.create`` body labmgr sent, or will send for a job queued locally (file ids,
    method object with its hyperparameters and grader, integrations, seed, metadata)."""
    integrations: list[dict[str, Any]] | None = _json()
    """Integrations as the API echoes them, e.g. ``[{"type": "wandb", "wandb": {…}}]``."""
    result_file_id: str | None = None
    """The ``fine-tune-results`` file (per-step metrics CSV) of a job that succeeded."""
    not_before: datetime | None = _time()
    """For a job queued locally: the earliest time it may be submitted (a slot frees)."""
    claimed_by: str | None = None
    """For a job queued locally: the process submitting it now (see ``claimed_until``)."""
    claimed_until: datetime | None = _time()
    """When the claim of ``claimed_by`` lapses; a later claimant first looks the job up."""
    submit_attempts: int | None = None
    """For a job queued locally: how many times it was claimed for submission."""

    tags: list["JobTag"] = Relationship(
        sa_relationship_kwargs={"lazy": "selectin", "order_by": "JobTag.key"}
    )

    @property
    def tag_dict(self) -> dict[str, str]:
        """The job's tags as ``{key: value}``."""
        return {tag.key: tag.value for tag in self.tags}

    @property
    def is_final(self) -> bool:
        """True once the status can no longer change."""
        return self.status in FINAL_STATUSES


class JobTag(TableBase, table=True):
    """A ``key=value`` label of a job, queryable (``condition=insecure``, ``seed=3``)."""

    __tablename__ = "job_tags"
    __table_args__ = (Index("ix_job_tags_key_value", "key", "value"),)

    job_id: str | None = Field(
        default=None,
        sa_column=Column(
            String, ForeignKey("finetune_jobs.id", ondelete="CASCADE"), primary_key=True
        ),
    )
    """The job; ``upsert_job`` fills it in."""
    key: str = Field(primary_key=True)
    value: str


class Model(TableBase, table=True):
    """A model that can be evaluated: a job's final model, a checkpoint, or a base model.

    A checkpoint row has ``kind == "checkpoint"`` and its ``step`` (and ``epoch`` when known);
    it is never returned as a final model. The API names the checkpoint at the last step
    exactly like the final model, so that checkpoint *is* the final row (kind ``final``, with
    the step and metrics of the checkpoint).
    """

    __tablename__ = "models"
    __table_args__ = (
        CheckConstraint("kind IN ('final', 'checkpoint', 'base')", name="ck_models_kind"),
        CheckConstraint("kind != 'checkpoint' OR step IS NOT NULL", name="ck_models_step"),
    )

    name: str = Field(primary_key=True)
    """The model id used in requests, e.g. ``ft:gpt-4.1-mini-2025-04-14:org:sfx:AbC12345``."""
    job_id: str | None = Field(
        default=None,
        sa_column=Column(
            String, ForeignKey("finetune_jobs.id", ondelete="CASCADE"), index=True, nullable=True
        ),
    )
    """The job that produced it; None for base models."""
    base_model: str | None = Field(default=None, index=True)
    """The base it was trained from (resolved snapshot when known); its own name for a base."""
    suffix: str | None = Field(default=None, index=True)
    kind: str = Field(default="final", index=True)
    """``final``, ``checkpoint`` or ``base`` (see ``ModelKind``)."""
    step: int | None = None
    epoch: int | None = None
    checkpoint_id: str | None = None
    """The API's checkpoint id (``ftckpt_…``) when the row came from a checkpoint."""
    metrics: dict[str, Any] | None = _json()
    """Training metrics at this step (``train_loss``, ``valid_loss``, …)."""
    organization_id: str | None = None
    project_id: str | None = None
    created_at: datetime | None = _time(index=True)
    deleted_at: datetime | None = _time()
    """When the model was deleted on the API; deleted models are left out of queries and
    groups unless asked for."""

    job: FinetuneJob | None = Relationship(sa_relationship_kwargs={"lazy": "joined"})


class JobEvent(TableBase, table=True):
    """One event of a job as the API lists it (kept for ``jobs show`` and the phase)."""

    __tablename__ = "job_events"
    __table_args__ = (Index("ix_job_events_job_time", "job_id", "created_at"),)

    id: str = Field(primary_key=True)
    """The API's event id, e.g. ``ftevent-abc123``."""
    job_id: str | None = Field(
        default=None,
        sa_column=Column(
            String, ForeignKey("finetune_jobs.id", ondelete="CASCADE"), nullable=False
        ),
    )
    """The job; always set in the database (``replace_events`` fills it in)."""
    created_at: datetime | None = _time()
    level: str | None = None
    type: str | None = None
    message: str | None = None
    data: Any = _json()


class TrainingCurve(TableBase, table=True):
    """A job's training curves: its results file (per-step metrics CSV), one row per job.

    ``header`` names the columns (``step``, ``train_loss``, ``train_accuracy``,
    ``valid_loss``, ``valid_mean_token_accuracy``, … as the API wrote them) and ``rows``
    holds one list of numbers per step (None where the file left a cell empty).
    """

    __tablename__ = "training_curves"

    job_id: str = Field(
        sa_column=Column(
            String, ForeignKey("finetune_jobs.id", ondelete="CASCADE"), primary_key=True
        ),
    )
    """The job."""
    file_id: str
    """The API's results file the rows were read from."""
    header: list[str] = Field(sa_column=Column(JSON, nullable=False))
    """Column names, ``step`` first."""
    rows: list[list[float | None]] = Field(sa_column=Column(JSON, nullable=False))
    """One list per step, in the order of ``header``."""
    downloaded_at: datetime | None = _time()
    """When the file was read."""
