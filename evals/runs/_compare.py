"""`compare_runs`: which question × group × score moved between two runs (each run's mean
outside the other run's interval)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from evals.errors import RunOptionsError
from evals.runs._folder import Run, load_run

COMPARISON_COLUMNS = [
    "question",
    "group",
    "score",
    "status",
    "mean_a",
    "ci_low_a",
    "ci_high_a",
    "mean_b",
    "ci_low_b",
    "ci_high_b",
    "change",
]


def compare_runs(run_a: Run | str | Path, run_b: Run | str | Path) -> pd.DataFrame:
    """One row per question × group × score of either run, with `status` one of `moved`,
    `same`, `only in A`, `only in B` (moved rows first, largest change first). Runs split by
    the same grid factors are compared level by level (their columns after `question`)."""
    first, second = (run if isinstance(run, Run) else load_run(run) for run in (run_a, run_b))
    if first.by != second.by:
        raise RunOptionsError(
            f"{first.path} is split by {', '.join(first.by) or 'no factor'} and {second.path} "
            f"by {', '.join(second.by) or 'no factor'}",
            hint="Split both the same way first: labmgr report RUN --by FACTOR.",
        )
    a, b = first.summary, second.summary
    keys = ["question", *first.by, "group", "score"]
    picked = ["mean", "ci_low", "ci_high"]
    merged = pd.merge(
        a[keys + picked],
        b[keys + picked],
        on=keys,
        how="outer",
        suffixes=("_a", "_b"),
        indicator=True,
        sort=False,
    )
    mean_a, mean_b = merged["mean_a"].to_numpy(float), merged["mean_b"].to_numpy(float)

    def outside(mean: np.ndarray, run: str) -> np.ndarray:  # `mean` outside `run`'s interval
        low, high = (merged[f"ci_{end}_{run}"].to_numpy(float) for end in ("low", "high"))
        return np.asarray((mean < low) | (mean > high))

    moved = outside(mean_b, "a") & outside(mean_a, "b")
    side = merged["_merge"].to_numpy()
    merged["status"] = np.select(
        [side == "left_only", side == "right_only", moved],
        ["only in A", "only in B", "moved"],
        "same",
    ).astype(object)
    merged["change"] = mean_b - mean_a
    rank = merged["status"].map({"moved": 0, "only in A": 1, "only in B": 1, "same": 2})
    merged = merged.assign(_rank=rank, _size=-merged["change"].abs().fillna(0))
    merged = merged.sort_values(["_rank", "_size"], kind="stable")
    return merged[[*keys[:1], *first.by, *COMPARISON_COLUMNS[1:]]].reset_index(drop=True)
