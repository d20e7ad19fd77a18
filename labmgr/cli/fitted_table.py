"""Tables that fit the terminal: every row on one line, fewer and wider columns when narrow."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True)
class Column:
    """One column: the lowest priority is dropped first; `compact` shortens a cell."""

    header: str
    priority: int
    compact: Callable[[str], str] | None = None
    justify: str = "left"


def _table(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    keep: Sequence[int],
    *,
    compact: Collection[int] = (),
    ellipsis: bool = False,
) -> Table:
    table = Table(title=title, title_justify="left")
    for index in keep:
        column = columns[index]
        table.add_column(
            column.header,
            no_wrap=True,
            # "fold" only ever applies to a table that does not fit, which is never printed:
            # rich ignores `justify` with overflow="ignore".
            overflow="ellipsis" if ellipsis else "fold",
            justify="right" if column.justify == "right" else "left",
        )
    for row in rows:
        cells = []
        for index in keep:
            shorten = columns[index].compact if index in compact else None
            text = shorten(row[index]) if shorten and row[index] else row[index]
            cells.append(Text(text, justify="right" if columns[index].justify == "right" else None))
        table.add_row(*cells)
    return table


def natural_width(console: Console, table: Table) -> int:
    options = console.options.update(max_width=1_000_000)
    return Measurement.get(console, options, table).maximum


def _width(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    keep: Sequence[int],
    compact: Collection[int],
) -> int:
    """`natural_width` of `_table(…)`, counted without building it: each column's widest cell
    or header with a space each side, and a border between and around the columns."""
    total = len(keep) + 1
    for index in keep:
        column = columns[index]
        shorten = column.compact if index in compact else None
        cells = (shorten(row[index]) if shorten and row[index] else row[index] for row in rows)
        total += max(cell_len(column.header), max(map(cell_len, cells), default=0)) + 2
    return total


def _fitted(
    console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]], title: str | None
) -> Table:
    everything = list(range(len(columns)))
    by_priority = sorted(everything, key=lambda i: (columns[i].priority, -i))
    keep = list(everything)
    for dropped in [None, *by_priority[:-1]]:
        if dropped is not None:
            keep.remove(dropped)
        shortenable = [i for i in by_priority if i in keep and columns[i].compact]
        for count in range(len(shortenable) + 1):
            if _width(columns, rows, keep, shortenable[:count]) <= console.width:
                return _table(title, columns, rows, keep, compact=shortenable[:count])
    return _table(title, columns, rows, keep, compact=everything, ellipsis=True)


def print_fitted(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    wide: bool = False,
) -> list[str]:
    """Print `rows` (one string per column) as a table that fits `console`'s width (with
    `wide`, every column in full, the lines as long as they need); the headers shown.

    Tried until the table fits: every cell in full, then the columns' compact forms one after
    another (least important first); the same after dropping the lowest-priority column, then
    the next; last, the top column alone, cut with an ellipsis."""
    if wide:
        table = _table(title, columns, rows, list(range(len(columns))))
        console.width = max(console.width, natural_width(console, table))
    else:
        table = _fitted(console, columns, rows, title)
    console.print(table, soft_wrap=False)
    return [str(column.header) for column in table.columns]
