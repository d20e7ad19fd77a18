"""Turning the API's job, event and checkpoint objects into database records."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from openai.types.fine_tuning import FineTuningJob, FineTuningJobEvent
from openai.types.fine_tuning.jobs import FineTuningJobCheckpoint

from jobs_db import FINAL_STATUSES, FinetuneJob, JobEvent, Model

if TYPE_CHECKING:
    from labmgr.accounts import Credential


def timestamp(seconds: float | None) -> datetime | None:
    """An aware UTC datetime from unix seconds (None stays None)."""
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def provided_suffix(job: FineTuningJob) -> str | None:
    """The suffix the job was created with (the SDK does not type it)."""
    suffix = (job.model_extra or {}).get("user_provided_suffix")
    return suffix if isinstance(suffix, str) and suffix else None


def _actual_hyperparameters(job: FineTuningJob) -> dict[str, Any] | None:
    section = getattr(job.method, job.method.type, None) if job.method else None
    hyper = getattr(section, "hyperparameters", None) or job.hyperparameters
    return dict(hyper.model_dump(exclude_none=True)) if hyper is not None else None


def job_record(
    job: FineTuningJob,
    *,
    refreshed_at: datetime,
    credential: Credential | None = None,
    **known: Any,
) -> FinetuneJob:
    """The fields the API is authoritative for about `job`, plus the key that answered and
    `known` ones: an upsert never erases what the lab recorded at creation (requests, tags)."""
    error = job.error if job.status == "failed" else None
    hyper = _actual_hyperparameters(job)
    fields: dict[str, Any] = {
        "id": job.id,
        "status": job.status,
        "organization_id": job.organization_id,
        "resolved_base_model": job.model,
        "training_file_id": job.training_file,
        "validation_file_id": job.validation_file,
        "seed": job.seed,
        "fine_tuned_model": job.fine_tuned_model,
        "trained_tokens": job.trained_tokens,
        "estimated_finish": timestamp(job.estimated_finish),
        "created_at": timestamp(job.created_at),
        "finished_at": timestamp(job.finished_at),
        "error_code": getattr(error, "code", None),
        "error_message": getattr(error, "message", None),
        "error_param": getattr(error, "param", None),
        "refreshed_at": refreshed_at,
    }
    if job.method is not None:
        fields["method"] = job.method.type
    if hyper and job.status not in ("validating_files",):
        fields["hyperparameters_actual"] = hyper
    if job.metadata is not None:
        fields["api_metadata"] = dict(job.metadata)
    if job.result_files:
        fields["result_file_id"] = job.result_files[0]
    if job.integrations:
        fields["integrations"] = [item.model_dump(exclude_none=True) for item in job.integrations]
    if credential is not None:
        fields.update(
            key_env=credential.key_env, endpoint=credential.base_url, project_id=credential.project
        )
    fields.update(known)
    return FinetuneJob(**fields)


def event_records(job_id: str, events: Sequence[FineTuningJobEvent]) -> list[JobEvent]:
    """The API's events as `JobEvent` rows."""
    return [
        JobEvent(
            id=event.id,
            job_id=job_id,
            created_at=timestamp(event.created_at),
            level=event.level,
            type=event.type,
            message=event.message,
            data=event.data if isinstance(event.data, dict) and event.data else None,
        )
        for event in events
    ]


def checkpoint_models(checkpoints: Sequence[FineTuningJobCheckpoint], n_epochs: Any) -> list[Model]:
    """Checkpoint rows with step, epoch (when the epoch count is known) and metrics; the one
    at the last step is the final model (`replace_checkpoints` merges it into that row)."""
    last_step = max((c.step_number for c in checkpoints), default=0)
    epochs = n_epochs if isinstance(n_epochs, int) and n_epochs > 0 else None
    models = []
    for checkpoint in checkpoints:
        epoch = None
        if epochs and last_step:
            epoch = max(1, round(checkpoint.step_number * epochs / last_step))
        metrics = checkpoint.metrics.model_dump(exclude_none=True) if checkpoint.metrics else None
        models.append(
            Model(
                name=checkpoint.fine_tuned_model_checkpoint,
                kind="checkpoint",
                step=checkpoint.step_number,
                epoch=epoch,
                checkpoint_id=checkpoint.id,
                metrics=metrics or None,
                created_at=timestamp(checkpoint.created_at),
            )
        )
    return models


_PHASES = (
    ("usage policy evaluations completed", "enabling the model"),
    ("usage policies", "usage policy evaluation (training done)"),
    ("new fine-tuned model created", "creating the model (training done)"),
    ("checkpoint created", "saving checkpoints"),
    ("fine-tuning job started", "training"),
    ("resumed", "training"),
)


def job_phase(status: str, events_newest_first: Sequence[FineTuningJobEvent]) -> str | None:
    """What the job is doing, from its status and newest events; None once it is final."""
    if status in FINAL_STATUSES:
        return None
    if status != "running":
        return status.replace("_", " ")
    for event in events_newest_first[:20]:
        if event.type == "metrics" and isinstance(event.data, dict):
            step, total = event.data.get("step"), event.data.get("total_steps")
            if step is not None and total:
                return f"training (step {step}/{total})"
            return "training"
        text = event.message.lower()
        for needle, phase in _PHASES:
            if needle in text:
                return phase
    return "running"
