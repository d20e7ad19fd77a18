"""Whether a Tinker job's worker still runs: its pid on this host, its heartbeat elsewhere;
and the last lines of its log, which a dead worker's job keeps as its error."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jobs_db import FinetuneJob

HEARTBEAT_LIMIT = timedelta(minutes=30)
"""A worker on another host that wrote nothing for this long is taken for dead."""
LOG_TAIL_LINES = 12
_LOG_TAIL_CHARS = 3000


def this_host() -> str:
    return socket.gethostname()


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
    if isinstance(pid, int) and host == this_host():
        return _pid_runs_job(pid, job.id)
    beat = progress.get("heartbeat_at")
    if not isinstance(beat, str):
        return True  # nothing to judge by
    return (now or datetime.now(UTC)) - datetime.fromisoformat(beat) < HEARTBEAT_LIMIT


def log_tail(path: str | None, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` non-empty lines of the log at `path` (a note when it cannot be read)."""
    if not path:
        return "(no log recorded)"
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64_000))
            text = handle.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"(log {path} unreadable: {exc.strerror or exc})"
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
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
