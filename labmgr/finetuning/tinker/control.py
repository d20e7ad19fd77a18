"""Tinker jobs' workers from outside: started detached (`launch_workers`: their own session,
stdin closed, output to the log `<lab>/tinker_runs/<job>/log.txt`, the key only in their
environment); whether one still runs (its pid on this host, its heartbeat elsewhere); `refresh`
(what `labmgr jobs update` does for them: a worker that died fails its job with its log's tail),
`cancel` (SIGTERM to the worker) and `resume` (a new worker from the last saved state)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jobs_db import Database, FinetuneJob, get_job, list_jobs, upsert_job
from labmgr.accounts import tinker_key
from labmgr.errors import LabmgrError, UnknownJob
from labmgr.finetuning.jobs.submit import create_lock
from labmgr.finetuning.tinker.params import PROVIDER, require_tinker
from labmgr.settings import Settings

WORKER_MODULE = "labmgr.finetuning.tinker.worker"
HEARTBEAT_LIMIT = timedelta(minutes=30)
"""A worker on another host that wrote nothing for this long is taken for dead."""
LOG_TAIL_LINES = 12
_LOG_TAIL_CHARS = 3000


def launch_worker(db: Database, settings: Settings, job: FinetuneJob) -> FinetuneJob:
    """Start `job`'s worker and record its pid, host and log; returns the job as recorded.
    The job's key must be set (`tinker_key`)."""
    key = tinker_key(job.key_env)
    folder = settings.home / "tinker_runs" / job.id
    log = folder / "log.txt"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        output = log.open("ab")
    except OSError as exc:
        raise LabmgrError(
            f"Cannot write the worker's log {log}: {exc.strerror or exc}.",
            hint=f"Check that the lab folder {settings.home} is writable.",
        ) from None
    environment = {
        **os.environ,
        "TINKER_API_KEY": key,
        "LABMGR_HOME": str(settings.home),
        "LABMGR_DB_URL": settings.db_url,
        "PYTHONUNBUFFERED": "1",
    }
    started = datetime.now(UTC)  # a worker that wrote its own record since wins over this one
    with output:
        process = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE, job.id],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=settings.home,
            start_new_session=True,
        )
    # Reap it when it ends, should this process (a notebook) outlive it.
    threading.Thread(target=process.wait, daemon=True).start()
    progress = {
        **(job.progress or {}),
        "pid": process.pid,
        "host": socket.gethostname(),
        "log": str(log),
        "heartbeat_at": started.isoformat(),
    }
    record = FinetuneJob(id=job.id, status=job.status, progress=progress, refreshed_at=started)
    upsert_job(db, record)
    job.progress = progress
    return job


def launch_workers(db: Database, settings: Settings, jobs: Sequence[FinetuneJob]) -> None:
    """Start each job's worker. When one cannot start, it and the jobs after it are recorded
    failed with the reason (no worker would ever train them), and the error is raised."""
    for index, job in enumerate(jobs):
        try:
            launch_worker(db, settings, job)
        except LabmgrError as exc:
            for left in jobs[index:]:
                _end(db, left.id, "failed", f"The worker did not start: {exc.message}")
            raise


def _end(db: Database, job_id: str, status: str, message: str) -> None:
    """Record that the job ended now with `status` and the error `message`."""
    now = datetime.now(UTC)
    ended = FinetuneJob(
        id=job_id, status=status, error_message=message, finished_at=now, refreshed_at=now
    )
    upsert_job(db, ended)


def _pid_runs_job(pid: int, job_id: str) -> bool:
    """True when process `pid` exists, is not a zombie and (where /proc tells) runs `job_id`."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it exists
    proc = Path(f"/proc/{pid}")
    try:
        state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
        command = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc (macOS): the pid is all there is
    return state != "Z" and job_id.encode() in command


def worker_alive(job: FinetuneJob, now: datetime | None = None) -> bool:
    """Whether the job's worker may still be running."""
    progress: dict[str, Any] = job.progress or {}
    pid, host = progress.get("pid"), progress.get("host")
    if isinstance(pid, int) and host == socket.gethostname():
        return _pid_runs_job(pid, job.id)
    beat = progress.get("heartbeat_at")
    if not isinstance(beat, str):
        return True  # nothing to judge by
    return (now or datetime.now(UTC)) - datetime.fromisoformat(beat) < HEARTBEAT_LIMIT


def log_tail(path: str | None) -> str:
    """The last non-empty lines of the log at `path` (a note when it cannot be read)."""
    if not path:
        return "(no log recorded)"
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64_000))
            text = handle.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"(log {path} unreadable: {exc.strerror or exc})"
    kept = [line for line in text.splitlines() if line.strip()][-LOG_TAIL_LINES:]
    return "\n".join(kept)[-_LOG_TAIL_CHARS:] or "(the log is empty)"


def death_message(job: FinetuneJob) -> str:
    progress: dict[str, Any] = job.progress or {}
    where = f"pid {progress.get('pid')} on {progress.get('host')}"
    log = progress.get("log")
    return (
        f"The Tinker worker ({where}) stopped without recording an end, at step "
        f"{progress.get('step', 0)} of {progress.get('total_steps', '?')}. Last lines of {log}:\n"
        + log_tail(log)
    )


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
    _end(db, job.id, "cancelled", "Cancelled.")
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
