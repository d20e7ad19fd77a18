"""Acting on Tinker jobs from outside their workers: `refresh` (what `labmgr jobs update`
does for them: a worker that died fails its job with its log's tail), `cancel` (SIGTERM to
the worker) and `resume` (a new worker from the last saved state)."""

from __future__ import annotations

import os
import signal
import socket
import time
from datetime import UTC, datetime
from typing import Any

from jobs_db import Database, FinetuneJob, get_job, list_jobs, upsert_job
from labmgr.accounts import tinker_key
from labmgr.errors import LabmgrError, UnknownJob
from labmgr.finetuning.jobs.submit import create_lock
from labmgr.finetuning.tinker.launch import death_message, launch_workers, worker_alive
from labmgr.finetuning.tinker.params import PROVIDER, require_tinker
from labmgr.settings import Settings

CANCEL_WAIT_SECONDS = 20.0
"""How long `cancel` waits for the worker to record the cancellation itself."""


def tinker_jobs_to_refresh(db: Database) -> list[FinetuneJob]:
    """Tinker jobs that are not final, or whose end `refresh` has not seen yet."""
    return [
        job
        for job in list_jobs(db)
        if job.provider == PROVIDER
        and (not job.is_final or (job.progress or {}).get("seen") != job.status)
    ]


def refresh(db: Database, job: FinetuneJob) -> tuple[str, FinetuneJob]:
    """The status `update` last saw and the job now: a running job whose worker is gone is
    marked failed with the tail of its log; a final one is marked seen. A live worker's row
    is left alone (only the worker writes it)."""
    now = datetime.now(UTC)
    died: dict[str, Any] = {}
    previous = job.status if not job.is_final else "running"
    if not job.is_final:
        if worker_alive(job, now):
            return previous, job
        job = get_job(db, job.id) or job  # its last write before it ended, or a new worker
        if not job.is_final and worker_alive(job, now):
            return previous, job
        if not job.is_final:
            died = {"status": "failed", "error_message": death_message(job), "finished_at": now}
    progress: dict[str, Any] = dict(job.progress or {})
    if not died:
        previous = str(progress.get("seen") or previous)
    progress["seen"] = died.get("status", job.status)
    upsert_job(db, FinetuneJob(id=job.id, progress=progress, refreshed_at=now, **died))
    return previous, get_job(db, job.id) or job


def progress_text(job: FinetuneJob) -> str:
    """``step 12/40, loss 1.23`` for a Tinker job that has started, else empty."""
    progress: dict[str, Any] = job.progress or {}
    if job.provider != PROVIDER or not progress.get("total_steps"):
        return ""
    loss = progress.get("last_loss")
    text = f"step {progress.get('step', 0)}/{progress['total_steps']}"
    return text + (f", loss {loss:.4g}" if isinstance(loss, int | float) else "")


def _signal(job: FinetuneJob, sig: int) -> bool:
    progress: dict[str, Any] = job.progress or {}
    pid = progress.get("pid")
    if not isinstance(pid, int) or progress.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def cancel(db: Database, job: FinetuneJob) -> FinetuneJob:
    """Stop the job's worker (SIGTERM; it records ``cancelled`` and closes its session); a
    worker that is gone, or does not answer in time, is recorded cancelled here."""
    if job.is_final:
        return job
    if worker_alive(job) and not _signal(job, signal.SIGTERM):
        progress: dict[str, Any] = job.progress or {}
        raise LabmgrError(
            f"Job {job.id}'s worker runs on {progress.get('host')}, not on this machine.",
            hint=f"Run `labmgr finetune cancel {job.id}` on {progress.get('host')}.",
        )
    deadline = time.monotonic() + CANCEL_WAIT_SECONDS
    while time.monotonic() < deadline and worker_alive(job):
        time.sleep(0.2)
        current = get_job(db, job.id)
        if current is not None and current.is_final:
            return current
    now = datetime.now(UTC)
    record = FinetuneJob(
        id=job.id, status="cancelled", error_message="Cancelled.", finished_at=now, refreshed_at=now
    )
    upsert_job(db, record)
    return get_job(db, job.id) or job


def resume(db: Database, settings: Settings, job: FinetuneJob, *, from_start: bool) -> FinetuneJob:
    """Start a new worker for a failed or cancelled job: from its last saved state (the steps
    before it are not trained again), or with `from_start` from step 0."""
    require_tinker()
    tinker_key(job.key_env)
    with create_lock(settings):  # two resumes at once start one worker
        job = get_job(db, job.id) or job
        if job.status not in ("failed", "cancelled"):
            raise LabmgrError(
                f"Job {job.id} is {job.status}; only a failed or cancelled Tinker job can be "
                "resumed.",
                hint="If its worker died, `labmgr jobs update` marks it failed first.",
            )
        progress: dict[str, Any] = dict(job.progress or {})
        if not progress.get("state_path") and not from_start:
            raise LabmgrError(
                f"Job {job.id} saved no state to resume from (it stopped at step "
                f"{progress.get('step', 0)}, before its first checkpoint).",
                hint=f"Start it over with `labmgr finetune resume {job.id} --from-start` (and "
                "a --save-every when creating jobs, to save states along the way).",
            )
        if from_start:
            for name in ("state_path", "state_step", "training_run", "last_loss"):
                progress.pop(name, None)
        progress.update(step=progress.get("state_step", 0), seen="queued")
        now = datetime.now(UTC)
        record = FinetuneJob(
            id=job.id,
            status="queued",
            error_message=None,
            finished_at=None,
            progress=progress,
            refreshed_at=now,
        )
        upsert_job(db, record)
    current = get_job(db, job.id)
    if current is None:
        raise UnknownJob(f"Job {job.id} is not in the lab's database.")
    launch_workers(db, settings, [current])
    return current
