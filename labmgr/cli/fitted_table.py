"""Tables that fit the terminal: every row on one line, fewer and wider columns when narrow."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

Item = TypeVar("Item")
ItemColumns = Sequence[tuple["Column", Callable[[Item], str]]]
"""Columns of `print_items`, each with the function making its cell of an item."""


@dataclass(frozen=True)
class Column:
    """One column: the lowest priority is dropped first; `compact` shortens a cell."""

    header: str
    priority: int
    compact: Callable[[str], str] | None = None
    justify: Literal["left", "right"] = "left"

    def cell(self, text: str, compact: bool) -> str:
        """`text` as shown: its compact form when asked for and there is one."""
        return self.compact(text) if compact and self.compact and text else text


def plain_columns(*headers: str, right: Collection[str] = ()) -> list[Column]:
    """Columns in order of importance (the last dropped first); those in `right` right-justified."""
    return [
        Column(header, -index, justify="right" if header in right else "left")
        for index, header in enumerate(headers)
    ]


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
            justify=column.justify,
        )
    for row in rows:
        cells = (
            Text(columns[i].cell(row[i], i in compact), justify=columns[i].justify) for i in keep
        )
        table.add_row(*cells)
    return table


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
        cells = (column.cell(row[index], index in compact) for row in rows)
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
        options = console.options.update(max_width=1_000_000)
        console.width = max(console.width, Measurement.get(console, options, table).maximum)
    else:
        table = _fitted(console, columns, rows, title)
    console.print(table, soft_wrap=False)
    return [str(column.header) for column in table.columns]


def print_items(
    console: Console,
    items: Sequence[Item],
    spec: ItemColumns[Item],
    *,
    title: str | None = None,
    wide: bool = False,
) -> list[str]:
    """`print_fitted` of one row per item, each column's cell the text its function makes of
    the item."""
    rows = [[text(item) for _, text in spec] for item in items]
    columns = [column for column, _ in spec]
    return print_fitted(console, columns, rows, title=title, wide=wide)
