"""What `update` returns: each checked job's state, and the jobs it could not check."""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, computed_field

SAFETY_CHECK_ALLOWANCE = timedelta(minutes=20)
"""Added to the API's training ETA for the usage-policy evaluation that follows training."""
_FINAL = ("succeeded", "failed", "cancelled")


class JobState(BaseModel):
    """One job as `update` found it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    job_id: str
    suffix: str | None
    key_env: str | None
    """The env var of the key that answered (never the key)."""
    previous_status: str
    status: str
    phase: str | None = None
    """What a running job is doing, from its events (e.g. usage policy evaluation)."""
    estimated_finish: datetime | None = None
    fine_tuned_model: str | None = None
    error: str | None = None
    checkpoints: int = 0
    """Checkpoint models recorded (not counting the final model)."""
    curves_stored: int = 0
    """1 when this update stored the job's training curves."""
    curves_problem: str | None = None
    """Why the job's results file could not be read, if it could not."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def real_eta(self) -> datetime | None:
        """Training ETA plus the usual time of the safety evaluation."""
        return self.estimated_finish + SAFETY_CHECK_ALLOWANCE if self.estimated_finish else None

    @property
    def is_final(self) -> bool:
        return self.status in _FINAL

    @computed_field  # type: ignore[prop-decorator]
    @property
    def newly_finished(self) -> bool:
        """True when this update saw the job reach a final status."""
        return self.is_final and self.previous_status != self.status


class SubmittedJob(BaseModel):
    """A job queued locally that `update` sent to the API (``queued-…`` id → the API's)."""

    queued_id: str
    job_id: str
    suffix: str | None


class QueuedJobState(BaseModel):
    """A job still queued locally after `update`, and the earliest time it may go."""

    job_id: str
    suffix: str | None
    not_before: datetime | None


class UncheckedJob(BaseModel):
    """A job `update` could not refresh, and why."""

    job_id: str
    suffix: str | None
    reason: str


class UpdateSummary(BaseModel):
    """The result of one `update`."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    checked: list[JobState] = []
    """Jobs refreshed, in the database's order (oldest first)."""
    unchecked: list[UncheckedJob] = []
    requests: int = 0
    submitted: list[SubmittedJob] = []
    """Jobs queued at the daily limit that were sent to the API now."""
    queued: list[QueuedJobState] = []
    curves: int = 0
    """Jobs whose training curves were stored by this update."""

    @property
    def running(self) -> list[JobState]:
        return [job for job in self.checked if not job.is_final]

    @property
    def newly_finished(self) -> list[JobState]:
        return [job for job in self.checked if job.newly_finished]

    @property
    def still_running(self) -> bool:
        """True when a job is not final yet (queued locally ones included)."""
        return bool(self.running) or bool(self.queued)
