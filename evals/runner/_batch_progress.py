"""What a waiting batch run shows: one row per batch (question, model, status, lines done and
failed), redrawn after every look at the batches."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.live import Live
    from rich.table import Table

    from evals.cache import BatchRecord

__all__ = ["BatchProgress"]


class BatchProgress:
    """A rich table of batch states on a terminal or in a notebook (or when `show` is True);
    nothing otherwise."""

    def __init__(self, *, show: bool | None, title: str) -> None:
        if show is None:
            show = sys.stderr.isatty() or "ipykernel" in sys.modules
        self.show = show
        self.title = title
        self._live: Live | None = None
        self._rows: dict[str, tuple[str, str, str, str, str]] = {}

    def __enter__(self) -> BatchProgress:
        if self.show:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(
                self._table(), console=Console(stderr=True), auto_refresh=False, transient=False
            )
            self._live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(kind, error, trace)
            self._live = None

    def update(
        self, record: BatchRecord, status: str, done: int | None = None, failed: int | None = None
    ) -> None:
        """One batch's state as last seen."""
        total = record.requests
        progress = (
            "" if done is None else f"{done}/{total}" + (f" ({failed} failed)" if failed else "")
        )
        self._rows[record.id] = (
            record.batch_id or "(submitting)",
            record.label,
            record.model,
            status,
            progress,
        )
        if self._live is not None:
            self._live.update(self._table(), refresh=True)

    def _table(self) -> Table:
        from rich.table import Table
        from rich.text import Text  # names and labels are shown as they are, never as markup

        table = Table(title=f"{self.title}: batches", title_justify="left")
        for column in ("batch", "question", "model", "status", "lines done"):
            table.add_column(column)
        for row in self._rows.values():
            table.add_row(*(Text(cell) for cell in row))
        return table
