"""Progress of a run: counters updated on the hot path (plain integers), drawn with rich a few
times a second (overall and per model, request rate, errors, cost), and an error summary."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

__all__ = ["ModelProgress", "RunProgress"]

_REFRESH_SECONDS = 0.25


@dataclass
class ModelProgress:
    total: int = 0
    done: int = 0
    failed: int = 0
    errors: int = 0
    cost: float = 0.0


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get_ipython = getattr(shell, "get_ipython", None)
    return bool(get_ipython and get_ipython() is not None)


class RunProgress:
    """Counts samples done and failed, per model; optionally shows them live."""

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
        if show is None:
            show = self.console.is_terminal or _in_notebook()
        self.show = show

    # ---- hot path -------------------------------------------------------------------------

    def done(self, model: str, samples: int, failed: int, cost: float) -> None:
        entry = self.models[model]
        entry.done += samples
        entry.failed += failed
        entry.cost += cost
        self.requests += 1

    def stored(self, model: str, samples: int) -> None:
        """Samples of `model` stored (after `done` counted their request)."""
        self.models[model].done += samples

    def failed(self, model: str, samples: int) -> None:
        self.models[model].failed += samples

    def error(self, model: str, message: str) -> None:
        self.models[model].errors += 1
        self.messages[f"{model}: {message}"] += 1

    def retrying(self, model: str) -> None:
        self.retries += 1

    # ---- display --------------------------------------------------------------------------

    @property
    def cost(self) -> float:
        return sum(m.cost for m in self.models.values())

    def _overall(self) -> str:
        elapsed = max(1e-9, time.monotonic() - self.started)
        errors = sum(m.errors for m in self.models.values())
        return (
            f"{self.requests / elapsed:6.1f} req/s  errors {errors}  retries {self.retries}  "
            f"cost ${self.cost:.4f}"
        )

    @asynccontextmanager
    async def live(self) -> AsyncIterator[None]:
        """Draw progress while the body runs (if shown); print the error summary after."""
        if not self.show:
            try:
                yield
            finally:
                self.print_summary()
            return
        progress = Progress(
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
        overall = progress.add_task(self.title, total=total, info="")
        rows = {
            model: progress.add_task(f"  {model[-40:]}", total=m.total, info="")
            for model, m in self.models.items()
        }

        def draw() -> None:
            finished = sum(m.done + m.failed for m in self.models.values())
            progress.update(overall, completed=finished, info=self._overall())
            for model, task in rows.items():
                m = self.models[model]
                info = f"errors {m.errors}  ${m.cost:.4f}" if m.errors or m.cost else ""
                progress.update(task, completed=m.done + m.failed, info=info)
            progress.refresh()

        async def refresh() -> None:
            while True:
                draw()
                await asyncio.sleep(_REFRESH_SECONDS)

        progress.start()
        task = asyncio.get_running_loop().create_task(refresh())
        try:
            yield
        finally:
            task.cancel()
            draw()
            progress.stop()
            self.print_summary()

    def print_summary(self) -> None:
        """The most frequent errors (only if there were any)."""
        if not self.messages:
            return
        table = Table(title="errors during the run", show_header=True)
        table.add_column("count", justify="right")
        table.add_column("model: error")
        for message, count in self.messages.most_common(10):
            table.add_row(str(count), message)
        self.console.print(table)
