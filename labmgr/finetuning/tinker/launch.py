"""A job's worker process: started detached (its own session, stdin closed, output to its log
`<lab>/tinker_runs/<job>/log.txt`, the key only in its environment); whether it still runs
(its pid on this host, its heartbeat elsewhere); the last lines of its log."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jobs_db import Database, FinetuneJob, upsert_job
from labmgr.accounts import tinker_key
from labmgr.errors import LabmgrError
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
            now = datetime.now(UTC)
            reason = f"The worker did not start: {exc.message}"
            for left in jobs[index:]:
                failed = FinetuneJob(
                    id=left.id,
                    status="failed",
                    error_message=reason,
                    finished_at=now,
                    refreshed_at=now,
                )
                upsert_job(db, failed)
            raise


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
