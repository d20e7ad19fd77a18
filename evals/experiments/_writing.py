"""`write_run` with its report: frames to a run folder (`evals.runs.write_run`), then the
report beside them (`evals.report.write_report`). The run folder and the report never call
each other; this is the one place that does both."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.runs import REPORT_FILE, Run
from evals.runs import write_run as write_run_folder
from evals.stats import DEFAULT_METHOD, DEFAULT_RESAMPLES, DEFAULT_SEED, Method, Metric

if TYPE_CHECKING:
    import pandas as pd

    from evals.questions import Question

__all__ = ["write_run"]


def write_run(
    out: str | Path,
    frames: Mapping[str, pd.DataFrame],
    *,
    questions: Mapping[str, Question] | None = None,
    groups: Mapping[str, Sequence[str]] | None = None,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    metrics: Sequence[Metric] = (),
    baseline: str | None = None,
    method: Method = DEFAULT_METHOD,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    report: bool = True,
    by_model: bool = False,
    info: Mapping[str, Any] | None = None,
    curves: pd.DataFrame | None = None,
    by: Sequence[str] = (),
) -> Run:
    """`evals.runs.write_run` (same arguments), then `report.html` unless `report=False`."""
    run = write_run_folder(
        out,
        frames,
        questions=questions,
        groups=groups,
        models=models,
        metrics=metrics,
        baseline=baseline,
        method=method,
        resamples=resamples,
        seed=seed,
        by_model=by_model,
        info=info,
        curves=curves,
        by=by,
    )
    if report:
        from evals.report import write_report  # matplotlib and seaborn: only for a report

        write_report(run, run.path / REPORT_FILE)
    return run
