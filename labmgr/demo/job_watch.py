"""Refreshing fine-tuning jobs until they finish, with a live rich table of their states."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from jobs_db import FinetuneJob
    from labmgr.settings import Settings

__all__ = ["JobRow", "watch_jobs"]

FINAL = ("succeeded", "failed", "cancelled")
_STYLE = {"succeeded": "green", "failed": "red", "cancelled": "yellow", "running": "cyan"}


@dataclass
class JobRow:
    """What the table shows about one job."""

    job_id: str
    suffix: str
    seed: int | None
    status: str
    detail: str = ""


def _table(rows: Sequence[JobRow], elapsed: float) -> Group:
    table = Table(title="Fine-tuning jobs", title_justify="left", expand=False)
    for column in ("job", "condition", "seed", "status", "model / phase"):
        table.add_column(column, overflow="fold")
    for row in rows:
        status = Text(row.status, style=_STYLE.get(row.status, "magenta"))
        seed = "" if row.seed is None else str(row.seed)
        table.add_row(row.job_id, row.suffix, seed, status, row.detail)
    done = sum(row.status in FINAL for row in rows)
    bar = ProgressBar(total=max(1, len(rows)), completed=done, width=40)
    caption = Text(f" {done}/{len(rows)} finished, {elapsed:.0f} s")
    line = Table.grid()
    line.add_row(bar, caption)
    return Group(table, line)


def watch_jobs(
    jobs: Sequence[FinetuneJob],
    settings: Settings,
    *,
    console: Console,
    timeout: float = 600.0,
) -> list[JobRow]:
    """Run `labmgr.finetuning.update` every second until every job is final; the final rows.
    Raises TimeoutError if jobs are still running after `timeout` seconds."""
    from labmgr.finetuning import update

    rows = {
        job.id: JobRow(job.id, job.suffix or "", job.seed, job.status or "validating_files")
        for job in jobs
    }
    started = time.monotonic()
    with Live(_table(list(rows.values()), 0.0), console=console, refresh_per_second=4) as live:
        while True:
            summary = update(settings=settings)
            for state in summary.checked:
                row = rows.get(state.job_id)
                if row is None:
                    continue
                row.status = state.status
                row.detail = state.fine_tuned_model or state.error or state.phase or ""
            for unchecked in summary.unchecked:
                if unchecked.job_id in rows:
                    rows[unchecked.job_id].detail = f"not checked: {unchecked.reason}"
            elapsed = time.monotonic() - started
            live.update(_table(list(rows.values()), elapsed))
            if all(row.status in FINAL for row in rows.values()):
                return list(rows.values())
            if elapsed > timeout:
                raise TimeoutError(f"fine-tuning jobs still running after {timeout:.0f} s")
            time.sleep(1.0)
