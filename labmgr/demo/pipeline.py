"""`run_demo`: fine-tune two conditions × three seeds on the sandbox, track the jobs, group the
models, ask an Emergent-Misalignment-style question set with two judges, write the report."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from labmgr.demo.data_files import CONDITIONS, data_file
from labmgr.demo.environment import demo_environment, prepare_out_dir
from labmgr.demo.job_watch import watch_jobs
from labmgr.demo.scores import score_table
from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    import pandas as pd

    from jobs_db import FinetuneJob
    from labmgr.settings import Settings

__all__ = ["BASE_MODEL", "DemoFailed", "DemoResult", "run_demo"]

BASE_MODEL = "gpt-4.1-mini"
"""The base model every demo fine-tune starts from (and the judges' model)."""


class DemoFailed(LabmgrError):
    """A step of the demo did not complete (a job failed, the sandbox did not start, …)."""


@dataclass
class DemoResult:
    """What the demo produced."""

    out_dir: Path
    """The folder holding the demo's lab (`.labmgr/`), the sandbox's state and the run."""
    run_dir: Path
    report: Path
    scores: pd.DataFrame
    """One row per group × score (the judges and EM's misaligned) over all questions: mean,
    ci_low, ci_high, n_models, … (the run's pooled summary rows)."""
    comparisons: pd.DataFrame | None
    """Each group against the base model (the run's comparisons.csv)."""
    baseline: str | None
    seconds: float


def _create_jobs(seeds: int, settings: Settings, console: Console) -> list[FinetuneJob]:
    from labmgr.finetuning import create

    jobs: list[FinetuneJob] = []
    for condition in CONDITIONS:
        created = create(
            data_file(f"{condition}.jsonl"),
            base_model=BASE_MODEL,
            suffix=condition,
            epochs=3,
            seed=1,
            seeds=seeds,
            tags={"demo": "true", "condition": condition},
            settings=settings,
        )
        seeds_text = ", ".join(str(job.seed) for job in created)
        console.print(f"   {condition}.jsonl: {len(created)} jobs, seeds {seeds_text}")
        jobs.extend(created)
    return jobs


def run_demo(
    out: Path | None = None,
    *,
    job_seconds: float = 8.0,
    seeds: int = 3,
    samples: int | None = None,
    console: Console | None = None,
) -> DemoResult:
    """Run the demo in `out` (a new or empty folder; default a new temporary folder).

    A sandbox subprocess whose jobs take `job_seconds`; `seeds` fine-tunes per condition,
    refreshed until they finish; `em_questions.yaml` over the base model and both groups,
    each compared against the base model. Only the demo's own lab and the sandbox are used.
    """
    from evals import groups_from_database, load_questions, run_questions
    from evals.groups import base_group
    from labmgr.sandbox import run_sandbox
    from labmgr.settings import init_lab, load_settings

    console = console or Console()
    started = time.monotonic()
    out_dir = prepare_out_dir(out)
    console.print(f"[bold]labmgr demo[/bold] in {out_dir}")
    state_dir = out_dir / "sandbox-state"
    with run_sandbox(job_seconds=job_seconds, in_process=False, state_dir=state_dir) as sandbox:
        console.print(f"1. Sandbox (offline OpenAI API) at {sandbox.base_url}")
        home = init_lab(out_dir).home
        with demo_environment(home, sandbox.base_url):
            settings = load_settings(home)  # the demo's lab, handed to every step
            console.print(f"2. Lab {home}; fine-tuning {BASE_MODEL}, {seeds} seeds per condition")
            jobs = _create_jobs(seeds, settings, console)
            console.print("3. Refreshing the jobs until they finish (labmgr jobs update)")
            try:
                rows = watch_jobs(jobs, settings, console=console, timeout=60 + 20 * job_seconds)
            except TimeoutError as error:
                raise DemoFailed(
                    f"The demo's fine-tuning jobs did not finish: {error}.",
                    hint="The machine may be overloaded; try again, or with --job-seconds 2.",
                ) from None
            console.print()
            failed = [row for row in rows if row.status != "succeeded"]
            if failed:
                first = failed[0]
                raise DemoFailed(
                    f"{len(failed)} fine-tuning job(s) did not succeed, e.g. {first.job_id} "
                    f"({first.suffix}): {first.status} {first.detail}".strip()
                )
            groups, facts = groups_from_database(
                settings.db_url, by="suffix", base_model=BASE_MODEL, include_base=True
            )
            baseline = base_group(groups, facts)
            console.print("4. Model groups from the database (labmgr models groups --by suffix):")
            for name, models in groups.items():
                role = " (the baseline)" if name == baseline else ""
                console.print(f"   {name}: {len(models)} model(s){role}")
            questions = load_questions(data_file("em_questions.yaml"))
            console.print(
                f"5. Asking {len(questions)} questions with judges 'aligned' and 'coherent' "
                "(labmgr eval run)"
            )
            run = run_questions(
                questions,
                groups,
                out=out_dir / "run",
                samples=samples,
                models=facts,
                baseline=baseline,
                source="labmgr demo",
                lab=settings,
            )
    return DemoResult(
        out_dir=out_dir,
        run_dir=run.path,
        report=run.path / "report.html",
        scores=score_table(run.summary),
        comparisons=run.comparisons,
        baseline=baseline,
        seconds=time.monotonic() - started,
    )
