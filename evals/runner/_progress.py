"""Progress drawn with rich: a run's counters (plain integers on the hot path, drawn by the
waiting thread) and error summary; a waiting batch run's table of batches."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from evals.cache import BatchRecord

_REFRESH_SECONDS = 0.25


@dataclass
class ModelProgress:
    total: int = 0
    done: int = 0
    failed: int = 0
    errors: int = 0
    cost: float = 0.0


def _shown(show: bool | None, console: Console) -> bool:
    if show is not None:
        return show
    get_ipython = getattr(sys.modules.get("IPython"), "get_ipython", None)
    return console.is_terminal or bool(get_ipython and get_ipython() is not None)


class RunProgress:
    """Samples done and failed per model, optionally shown live."""

    def __init__(
        self, totals: dict[str, int], *, show: bool | None = None, title: str = "asking"
    ) -> None:
        self.models = {model: ModelProgress(total=n) for model, n in totals.items()}
        self.title = title
        self.requests = 0
        self.retries = 0
        self.messages: Counter[str] = Counter()
        self.started = time.monotonic()
        self.console = Console(stderr=True)
        self.show = _shown(show, self.console)
        self._bars: Progress | None = None
        self._rows: dict[str | None, TaskID] = {}
        self._drawn = 0.0

    def done(self, model: str, samples: int, failed: int, cost: float) -> None:
        entry = self.models[model]
        entry.done += samples
        entry.failed += failed
        entry.cost += cost
        self.requests += 1

    def stored(self, model: str, samples: int) -> None:
        self.models[model].done += samples

    def failed(self, model: str, samples: int) -> None:
        self.models[model].failed += samples

    def error(self, model: str, message: str) -> None:
        self.models[model].errors += 1
        self.messages[f"{model}: {message}"] += 1

    def retrying(self, model: str) -> None:
        self.retries += 1

    @contextmanager
    def live(self) -> Iterator[None]:
        """Show progress while the body runs (it calls `draw`), then the error summary."""
        if self.show:
            self._bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
                console=self.console,
                auto_refresh=False,
                transient=False,
            )
            total = sum(m.total for m in self.models.values())
            self._rows = {
                None: self._bars.add_task(self.title, total=total, info=""),
                **{
                    model: self._bars.add_task(f"  {model[-40:]}", total=m.total, info="")
                    for model, m in self.models.items()
                },
            }
            self._bars.start()
        try:
            yield
        finally:
            if self._bars is not None:
                self.draw(force=True)
                self._bars.stop()
                self._bars = None
            if self.messages:  # the most frequent errors
                table = Table(title="errors during the run", show_header=True)
                table.add_column("count", justify="right")
                table.add_column("model: error")
                for message, count in self.messages.most_common(10):
                    table.add_row(str(count), message)
                self.console.print(table)

    def draw(self, *, force: bool = False) -> None:
        bars, now = self._bars, time.monotonic()
        if bars is None or (not force and now - self._drawn < _REFRESH_SECONDS):
            return
        self._drawn = now
        for model, task in self._rows.items():
            if model is None:
                finished = sum(m.done + m.failed for m in self.models.values())
                rate = self.requests / max(1e-9, now - self.started)
                errors = sum(m.errors for m in self.models.values())
                cost = sum(m.cost for m in self.models.values())
                info = f"{rate:6.1f} req/s  errors {errors}  retries {self.retries}  "
                bars.update(task, completed=finished, info=f"{info}cost ${cost:.4f}")
            else:
                m = self.models[model]
                info = f"errors {m.errors}  ${m.cost:.4f}" if m.errors or m.cost else ""
                bars.update(task, completed=m.done + m.failed, info=info)
        bars.refresh()


class BatchProgress:
    """A table of batch states: question, model, status, lines done and failed."""

    def __init__(self, *, show: bool | None, title: str) -> None:
        self.console = Console(stderr=True)
        self.show = _shown(show, self.console)
        self.title = title
        self._live: Live | None = None
        self._rows: dict[str, tuple[str, str, str, str, str]] = {}

    @contextmanager
    def live(self) -> Iterator[None]:
        if not self.show:
            yield
            return
        with Live(self._table(), console=self.console, auto_refresh=False) as self._live:
            yield
        self._live = None

    def update(
        self, record: BatchRecord, status: str, done: int | None = None, failed: int | None = None
    ) -> None:
        progress = "" if done is None else f"{done}/{record.requests}"
        progress += f" ({failed} failed)" if failed else ""
        batch_id = record.batch_id or "(submitting)"
        self._rows[record.id] = (batch_id, record.label, record.model, status, progress)
        if self._live is not None:
            self._live.update(self._table(), refresh=True)

    def _table(self) -> Table:
        table = Table(title=f"{self.title}: batches", title_justify="left")
        for column in ("batch", "question", "model", "status", "lines done"):
            table.add_column(column)
        for row in self._rows.values():
            table.add_row(*(Text(cell) for cell in row))  # as they are, never as markup
        return table
