"""Starting a job's worker detached: its own session, stdin closed, output to its log in the
lab (`<lab>/tinker_runs/<job>/log.txt`), the key only in its environment."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

from jobs_db import Database, FinetuneJob, upsert_job
from labmgr.accounts import tinker_key
from labmgr.errors import LabmgrError
from labmgr.finetuning.tinker.liveness import this_host
from labmgr.settings import Settings

WORKER_MODULE = "labmgr.finetuning.tinker.worker"


def run_dir(settings: Settings, job_id: str) -> Path:
    return settings.home / "tinker_runs" / job_id


def launch_worker(db: Database, settings: Settings, job: FinetuneJob) -> FinetuneJob:
    """Start `job`'s worker and record its pid, host and log; returns the job as recorded.
    The job's key must be set (`tinker_key`)."""
    key = tinker_key(job.key_env)
    folder = run_dir(settings, job.id)
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
        "host": this_host(),
        "log": str(log),
        "heartbeat_at": started.isoformat(),
    }
    record = FinetuneJob(id=job.id, status=job.status, progress=progress, refreshed_at=started)
    upsert_job(db, record)
    job.progress = progress
    return job
