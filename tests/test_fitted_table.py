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
