"""What a worker writes into the lab's database as it trains: status and progress (with a
heartbeat) after each step, the loss curve, and each sampler checkpoint as a model."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from jobs_db import (
    Database,
    FinetuneJob,
    Model,
    TrainingCurve,
    job_curves,
    job_models,
    replace_checkpoints,
    store_curve,
    upsert_job,
    upsert_model,
)

CURVE_FILE = "tinker-worker"
"""The curve's ``file_id``: a Tinker job's curve is written by its worker, not downloaded."""


@dataclass
class JobRecorder:
    """One worker's writes to its job's row, curve and models."""

    db: Database
    job: FinetuneJob
    progress: dict[str, Any] = field(default_factory=dict)
    rows: list[list[float | None]] = field(default_factory=list)

    def start(self, total_steps: int) -> int:
        """Mark the job running in this process; keep only the curve and checkpoints up to
        the saved state it resumes from. Returns the last step done (0 for a fresh start)."""
        progress = dict(self.job.progress or {})
        done = int(progress.get("state_step") or 0) if progress.get("state_path") else 0
        curve = job_curves(self.db, [self.job.id]).get(self.job.id)
        self.rows = [row for row in (curve.rows if curve else []) if (row[0] or 0) <= done]
        kept = [
            model
            for model in job_models(self.db, self.job.id)
            if model.kind == "checkpoint" and (model.step or 0) <= done
        ]
        replace_checkpoints(self.db, self.job.id, kept)
        last = self.rows[-1][1] if self.rows else None
        self.progress = {
            **progress,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "step": done,
            "total_steps": total_steps,
            "last_loss": last,
        }
        self._write(status="running", error_message=None, finished_at=None)
        self._store_curve()
        return done

    def note(self, **progress: Any) -> None:
        """Add to the job's progress (``training_run``, ``state_path`` and ``state_step``)."""
        self.progress.update(progress)
        self._write()

    def step(self, step: int, loss: float) -> None:
        self.rows.append([step, loss])
        self._store_curve()
        self.note(step=step, last_loss=loss)

    def checkpoint(self, path: str, step: int, epoch: int, loss: float | None) -> None:
        """Record sampler weights as a checkpoint model (`finish` makes the last one the
        job's final model; a run killed before that leaves a checkpoint resume drops)."""
        metrics = {"train_loss": loss} if loss is not None else None
        upsert_model(
            self.db,
            Model(
                name=path,
                job_id=self.job.id,
                kind="checkpoint",
                step=step,
                epoch=epoch,
                metrics=metrics,
                created_at=datetime.now(UTC),
            ),
        )

    def finish(self, status: str, error: str | None = None, model: str | None = None) -> None:
        now = datetime.now(UTC)
        self._write(status=status, error_message=error, finished_at=now, fine_tuned_model=model)

    def _store_curve(self) -> None:
        curve = TrainingCurve(
            job_id=self.job.id,
            file_id=CURVE_FILE,
            header=["step", "train_loss"],
            rows=self.rows,
            downloaded_at=datetime.now(UTC),
        )
        store_curve(self.db, curve)

    def _write(self, **fields: Any) -> None:
        now = datetime.now(UTC)
        self.progress["heartbeat_at"] = now.isoformat()
        record = FinetuneJob(
            id=self.job.id, progress=dict(self.progress), refreshed_at=now, **fields
        )
        upsert_job(self.db, record)
