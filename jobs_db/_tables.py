"""The SQLModel tables. No API key is stored, only the *name* of its env var (``key_env``)."""

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, CheckConstraint, Column, DateTime, ForeignKey, Index, MetaData, String
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, Relationship, SQLModel

FINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
"""Job statuses that never change again. Every other string (``"paused"`` too) is non-final."""

QUEUED_LOCALLY = "queued_locally"
"""Status of a job held back until the daily job limit frees a slot (id ``queued-…``, files
uploaded, ``create_request`` ready); not on the API yet."""


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC (``timestamptz``; naive UTC text on SQLite, which sorts), read
    back timezone-aware; naive datetimes are refused."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}: {value!r}")
        if value.tzinfo is None:
            raise ValueError(
                f"naive datetime {value.isoformat()} has no timezone; "
                "pass an aware one, e.g. datetime.fromtimestamp(seconds, UTC)"
            )
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _time(*, index: bool = False) -> Any:
    return Field(default=None, sa_column=Column(UTCDateTime(), index=index, nullable=True))


def _json() -> Any:
    return Field(default=None, sa_column=Column(JSON, nullable=True))


def _job_id(*, required: bool = False, **column: Any) -> Any:
    """A reference to a fine-tuning job; the row is deleted with the job."""
    sa_column = Column(String, ForeignKey("finetune_jobs.id", ondelete="CASCADE"), **column)
    return Field(sa_column=sa_column) if required else Field(default=None, sa_column=sa_column)


class TableBase(SQLModel):
    """Base of every jobs_db table, with metadata of its own."""

    metadata: ClassVar[MetaData] = MetaData()


class TrainingFile(TableBase, table=True):
    """A file uploaded for fine-tuning (one row per uploaded copy)."""

    __tablename__ = "training_files"
    __table_args__ = (Index("ix_training_files_md5_owner", "md5", "organization_id", "project_id"),)

    id: str = Field(primary_key=True)
    organization_id: str | None = None
    project_id: str | None = None
    key_env: str | None = None
    endpoint: str | None = None
    """Base URL of the API, e.g. ``https://api.openai.com/v1``."""
    local_path: str | None = None
    filename: str | None = None
    md5: str | None = None
    size_bytes: int | None = None
    num_examples: int | None = None
    purpose: str | None = None
    created_at: datetime | None = _time()
    uploaded_at: datetime | None = _time()
    """When this lab uploaded (or first recorded) it."""


class FinetuneJob(TableBase, table=True):
    """A fine-tuning job, as requested and as last seen on the API."""

    __tablename__ = "finetune_jobs"
    __table_args__ = (Index("ix_finetune_jobs_owner", "organization_id", "project_id"),)

    id: str = Field(primary_key=True)
    organization_id: str | None = None
    project_id: str | None = None
    key_env: str | None = None
    endpoint: str | None = None
    base_model: str | None = Field(default=None, index=True)
    """The base model as requested; ``resolved_base_model`` is the API's snapshot."""
    resolved_base_model: str | None = None
    suffix: str | None = Field(default=None, index=True)
    training_file_id: str | None = None
    validation_file_id: str | None = None
    method: str | None = None
    hyperparameters_requested: dict[str, Any] | None = _json()
    """As sent, ``"auto"`` included."""
    hyperparameters_actual: dict[str, Any] | None = _json()
    seed_requested: int | None = None
    seed: int | None = None
    """The seed the API actually used."""
    status: str = Field(index=True)
    """The raw API status string (``paused`` too)."""
    error_code: str | None = None
    error_message: str | None = None
    error_param: str | None = None
    estimated_finish: datetime | None = _time()
    phase: str | None = None
    """What the job is doing per its events (``usage policy evaluation``)."""
    trained_tokens: int | None = None
    fine_tuned_model: str | None = None
    created_at: datetime | None = _time(index=True)
    finished_at: datetime | None = _time()
    refreshed_at: datetime | None = _time()
    """When this row was last brought up to date from the API; stale snapshots never win."""
    api_metadata: dict[str, str] | None = _json()
    """The ``metadata`` sent to the API with the job."""
    create_request: dict[str, Any] | None = _json()
    """The ``jobs.create`` body labmgr sent, or will send for a job queued locally."""
    integrations: list[dict[str, Any]] | None = _json()
    result_file_id: str | None = None
    """The ``fine-tune-results`` file (per-step metrics CSV) of a job that succeeded."""
    not_before: datetime | None = _time()
    """Queued locally: the earliest time it may be submitted."""
    claimed_by: str | None = None
    """Queued locally: the process submitting it now, until ``claimed_until``."""
    claimed_until: datetime | None = _time()
    submit_attempts: int | None = None
    provider: str | None = None
    """Who trains the job: ``tinker``, or None for OpenAI's fine-tuning API."""
    progress: dict[str, Any] | None = _json()
    """A Tinker job's worker and where it is: ``step``, ``total_steps``, ``last_loss``,
    ``pid``, ``host``, ``log``, ``state_path``, ``state_step``, ``training_run``,
    ``heartbeat_at`` (ISO), and ``seen``: the status ``jobs update`` last reported."""

    tags: list["JobTag"] = Relationship(
        sa_relationship_kwargs={"lazy": "selectin", "order_by": "JobTag.key"}
    )

    @property
    def tag_dict(self) -> dict[str, str]:
        return {tag.key: tag.value for tag in self.tags}

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES


class JobTag(TableBase, table=True):
    """A ``key=value`` label of a job, queryable (``condition=insecure``, ``seed=3``)."""

    __tablename__ = "job_tags"
    __table_args__ = (Index("ix_job_tags_key_value", "key", "value"),)

    job_id: str | None = _job_id(primary_key=True)
    key: str = Field(primary_key=True)
    value: str


class Model(TableBase, table=True):
    """A job's final model, a checkpoint (with its ``step``), or a base model. The API names
    the last checkpoint like the final model: that checkpoint *is* the final row."""

    __tablename__ = "models"
    __table_args__ = (
        CheckConstraint("kind IN ('final', 'checkpoint', 'base')", name="ck_models_kind"),
        CheckConstraint("kind != 'checkpoint' OR step IS NOT NULL", name="ck_models_step"),
    )

    name: str = Field(primary_key=True)
    """The model id used in requests."""
    job_id: str | None = _job_id(index=True, nullable=True)
    base_model: str | None = Field(default=None, index=True)
    """The base it was trained from (resolved snapshot when known); its own name for a base."""
    suffix: str | None = Field(default=None, index=True)
    kind: str = Field(default="final", index=True)
    """``final``, ``checkpoint`` or ``base``."""
    step: int | None = None
    epoch: int | None = None
    checkpoint_id: str | None = None
    metrics: dict[str, Any] | None = _json()
    """Training metrics at this step (``train_loss``, ``valid_loss``, …)."""
    organization_id: str | None = None
    project_id: str | None = None
    created_at: datetime | None = _time(index=True)
    deleted_at: datetime | None = _time()
    """When it was deleted on the API; queries and groups leave it out unless asked."""

    job: FinetuneJob | None = Relationship(sa_relationship_kwargs={"lazy": "joined"})


class JobEvent(TableBase, table=True):
    """One event of a job as the API lists it."""

    __tablename__ = "job_events"
    __table_args__ = (Index("ix_job_events_job_time", "job_id", "created_at"),)

    id: str = Field(primary_key=True)
    job_id: str | None = _job_id(nullable=False)
    created_at: datetime | None = _time()
    level: str | None = None
    type: str | None = None
    message: str | None = None
    data: Any = _json()


class TrainingCurve(TableBase, table=True):
    """A job's results file (per-step metrics CSV), one row per job."""

    __tablename__ = "training_curves"

    job_id: str = _job_id(required=True, primary_key=True)
    file_id: str
    header: list[str] = Field(sa_column=Column(JSON, nullable=False))
    """Column names as the API wrote them, ``step`` first."""
    rows: list[list[float | None]] = Field(sa_column=Column(JSON, nullable=False))
    """One list per step, in the order of ``header`` (None for an empty cell)."""
    downloaded_at: datetime | None = _time()
