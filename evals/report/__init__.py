"""The HTML report of a run: one self-contained offline file (figures embedded, no network),
with the summary, a section per question, a sample browser and a side-by-side view.

from evals.report import write_report
write_report("runs/20250101-120000-wish")      # → runs/…/report.html
"""

from __future__ import annotations

from pathlib import Path

from evals.report._page import render_report
from evals.report._payload import safe_json
from evals.runs import REPORT_FILE, Run, load_run

__all__ = ["render_report", "safe_json", "write_report"]


def write_report(
    run: Run | str | Path, out: str | Path | None = None, *, figures: bool = True
) -> Path:
    """Write the report of `run` (a `Run` or its folder) to `out` (default: the folder's
    report.html) and return its path."""
    loaded = run if isinstance(run, Run) else load_run(run)
    target = Path(out) if out is not None else loaded.path / REPORT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text(render_report(loaded, figures=figures), encoding="utf-8")
    temporary.replace(target)
    return target
