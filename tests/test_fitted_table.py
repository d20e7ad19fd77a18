"""Fitted tables: numbers stay right-aligned while every row stays one line."""

from __future__ import annotations

import io

from rich.console import Console

from labmgr.cli.fitted_table import Column, print_fitted


def test_right_justified_columns_are_right_aligned_in_a_table_that_fits() -> None:
    out = io.StringIO()
    console = Console(file=out, width=60)
    columns = [Column("group", 2), Column("models", 1, justify="right")]
    print_fitted(console, columns, [["hostile", "3"], ["base", "12"]])
    rows = [line for line in out.getvalue().splitlines() if line.startswith("│")]
    assert rows == ["│ hostile │      3 │", "│ base    │     12 │"]


def test_a_table_shows_each_cell_whole_or_shortened_never_cut_at_any_width() -> None:
    """Tables of wide characters, empty cells and shortenable columns, printed at widths
    from their own down to 10: each row stays one line no wider than the terminal, and each
    cell shown is its text or that column's short form (never cut), until only the most
    important column is left and is cut with an ellipsis."""
    import random

    from rich.cells import cell_len

    rng = random.Random(7)
    for _ in range(25):
        columns = [
            Column(
                rng.choice(["q", "group", "ü 表", "x"]) + str(i),
                rng.randint(0, 3),
                compact=(lambda text: text[:3]) if rng.random() < 0.5 else None,
            )
            for i in range(rng.randint(1, 6))
        ]
        rows = [
            [rng.choice(["", "12.3 [1, 2]*", "表表 x", "a" * rng.randint(0, 25)]) for _ in columns]
            for _ in range(rng.randint(1, 5))
        ]
        whole: list[str] | None = None
        for width in range(120, 9, -1):
            out = io.StringIO()
            shown = print_fitted(Console(file=out, width=width), columns, rows)
            lines = out.getvalue().splitlines()
            whole = whole or lines
            assert len(lines) == len(whole)
            assert all(cell_len(line) <= width for line in lines)
            of = {column.header: column for column in columns}
            for row, line in zip(
                rows, [line for line in lines if line.startswith("│")], strict=True
            ):
                cells = [cell.strip() for cell in line.strip("│").split("│")]
                for header, cell in zip(shown, cells, strict=True):
                    column = of[header]
                    text = row[columns.index(column)]
                    short = column.compact(text) if column.compact and text else text
                    assert cell in (text.strip(), short.strip()) or cell.endswith("…"), cell
