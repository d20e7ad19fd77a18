"""The demo's closing table: each group's mean judge score over every question, with a 95%
interval that resamples the group's models (seeds) and then their samples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["score_table", "scores_as_rich", "separated_groups"]


def score_table(frames: Mapping[str, pd.DataFrame], judges: Sequence[str]) -> pd.DataFrame:
    """Group × judge over all questions (`evals.stats.summarize` of the pooled samples)."""
    import pandas as pd

    from evals.stats import summarize

    pooled = pd.concat(list(frames.values()), ignore_index=True)
    summary = summarize({"all questions": pooled}, {"all questions": list(judges)})
    return summary.drop(columns=["question"]).reset_index(drop=True)


def scores_as_rich(scores: pd.DataFrame) -> Table:
    """`score_table` as a rich table: one row per group, one column per judge."""
    judges = list(dict.fromkeys(scores["score"]))
    table = Table(title="Mean judge score over all questions (95% CI over seeds and samples)")
    table.add_column("group")
    table.add_column("models", justify="right")
    for judge in judges:
        table.add_column(judge, justify="right")
    for group, rows in scores.groupby("group", sort=False):
        cells = []
        for judge in judges:
            row = rows[rows["score"] == judge]
            if row.empty:
                cells.append("")
                continue
            r = row.iloc[0]
            cells.append(f"{r['mean']:.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}]")
        table.add_row(str(group), str(int(rows["n_models"].max())), *cells)
    return table


def separated_groups(scores: pd.DataFrame, judge: str) -> list[tuple[str, str]]:
    """Pairs (lower, higher) of groups whose 95% intervals on `judge` do not overlap."""
    rows = scores[(scores["score"] == judge) & scores["mean"].notna()]
    intervals = [
        (str(group), float(low), float(high))
        for group, low, high in zip(rows["group"], rows["ci_low"], rows["ci_high"], strict=True)
    ]
    return [
        (lower, higher)
        for lower, _, lower_top in intervals
        for higher, higher_bottom, _ in intervals
        if lower_top < higher_bottom
    ]
