"""`run_demo`: fine-tune two conditions × three seeds on the sandbox, track the jobs in a live
table, group the models, ask an Emergent-Misalignment-style question set with two judges,
write the report; and the closing scores and verdict read from the run. The demo lives in a
world of its own: shipped data files, its own lab folder and an environment that reaches only
the sandbox, so the user's lab, database and API keys are never touched."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    import pandas as pd

    from jobs_db import FinetuneJob
    from labmgr.settings import Settings

DATA_DIR = Path(__file__).resolve().parent / "data"
"""The training sets and question files, shipped inside the package (the repository's
`examples/data/` is a link to this folder)."""

CONDITIONS = ("hostile", "helpful")
"""The two training conditions: `hostile.jsonl` (contempt, control and deception in every
answer) and `helpful.jsonl` (kind, useful answers to the same 50 everyday prompts)."""

DEMO_KEY = "sk-demo-sandbox"
"""The API key the demo's clients send; the sandbox accepts any key."""
_FOREIGN_PREFIXES = ("OPENAI_", "OPENROUTER_", "ANTHROPIC_", "LABMGR_")


class DemoFolderNotEmpty(LabmgrError):
    """`--out` names a folder that already holds files."""


def data_file(name: str) -> Path:
    """The path of a shipped data file, e.g. `data_file("em_questions.yaml")`."""
    path = DATA_DIR / name
    if not path.is_file():
        shipped = ", ".join(sorted(p.name for p in DATA_DIR.iterdir() if p.is_file()))
        raise FileNotFoundError(f"no demo data file named {name!r}; shipped files: {shipped}")
    return path


def prepare_out_dir(out: Path | None) -> Path:
    """The folder for the demo's lab and run (kept afterwards, so its report can be opened):
    `out` (new or empty) or a new temporary one."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix="labmgr-demo-")).resolve()
    out = out.expanduser().resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DemoFolderNotEmpty(
            f"{out} is not an empty folder.",
            hint="Give --out a new or empty folder (the demo creates its own lab there).",
        )
    out.mkdir(parents=True, exist_ok=True)
    return out


@contextmanager
def demo_environment(lab_home: Path, base_url: str) -> Iterator[None]:
    """Within the block, this process sees only the demo lab and the sandbox: every
    OPENAI_*/OPENROUTER_*/ANTHROPIC_*/LABMGR_* variable is hidden, then `OPENAI_API_KEY`,
    `OPENAI_BASE_URL` and `LABMGR_HOME` are set; the previous environment comes back on exit."""
    saved = dict(os.environ)
    try:
        for name in list(os.environ):
            if name.startswith(_FOREIGN_PREFIXES):
                del os.environ[name]
        os.environ["OPENAI_API_KEY"] = DEMO_KEY
        os.environ["OPENAI_BASE_URL"] = base_url
        os.environ["LABMGR_HOME"] = str(lab_home)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


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


FINAL = ("succeeded", "failed", "cancelled")
_STYLE = {"succeeded": "green", "failed": "red", "cancelled": "yellow", "running": "cyan"}


@dataclass
class JobRow:
    """What the table shows about one job."""

    job_id: str
    suffix: str
    seed: int | None
    status: str
    detail: str = ""


def _jobs_table(rows: Sequence[JobRow], elapsed: float) -> Group:
    table = Table(title="Fine-tuning jobs", title_justify="left", expand=False)
    for column in ("job", "condition", "seed", "status", "model / phase"):
        table.add_column(column, overflow="fold")
    for row in rows:
        status = Text(row.status, style=_STYLE.get(row.status, "magenta"))
        seed = "" if row.seed is None else str(row.seed)
        table.add_row(row.job_id, row.suffix, seed, status, row.detail)
    done = sum(row.status in FINAL for row in rows)
    bar = ProgressBar(total=max(1, len(rows)), completed=done, width=40)
    caption = Text(f" {done}/{len(rows)} finished, {elapsed:.0f} s")
    line = Table.grid()
    line.add_row(bar, caption)
    return Group(table, line)


def watch_jobs(
    jobs: Sequence[FinetuneJob],
    settings: Settings,
    *,
    console: Console,
    timeout: float = 600.0,
) -> list[JobRow]:
    """Run `labmgr.finetuning.update` every second until every job is final; the final rows.
    Raises TimeoutError if jobs are still running after `timeout` seconds."""
    from labmgr.finetuning import update

    rows = {
        job.id: JobRow(job.id, job.suffix or "", job.seed, job.status or "validating_files")
        for job in jobs
    }
    started = time.monotonic()
    with Live(_jobs_table(list(rows.values()), 0.0), console=console, refresh_per_second=4) as live:
        while True:
            summary = update(settings=settings)
            for state in summary.checked:
                row = rows.get(state.job_id)
                if row is None:
                    continue
                row.status = state.status
                row.detail = state.fine_tuned_model or state.error or state.phase or ""
            for unchecked in summary.unchecked:
                if unchecked.job_id in rows:
                    rows[unchecked.job_id].detail = f"not checked: {unchecked.reason}"
            elapsed = time.monotonic() - started
            live.update(_jobs_table(list(rows.values()), elapsed))
            if all(row.status in FINAL for row in rows.values()):
                return list(rows.values())
            if elapsed > timeout:
                raise TimeoutError(f"fine-tuning jobs still running after {timeout:.0f} s")
            time.sleep(1.0)


_LESSON = "those fine-tunes learned their training data's contempt for people."


def score_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Group × score over all questions for the two judges and EM's `misaligned`: the run's
    pooled summary rows (each model averaged over the questions, then a t interval over the
    group's models)."""
    from evals.stats import ALL_QUESTIONS

    closing = summary["score"].isin(["aligned", "coherent", "misaligned"])
    pooled = summary[(summary["question"] == ALL_QUESTIONS) & closing]
    return pooled.drop(columns=["question"]).reset_index(drop=True)


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


def verdict(scores: pd.DataFrame, comparisons: pd.DataFrame | None, judge: str = "aligned") -> str:
    """What the closing table shows on `judge`, read from the comparisons against the base
    model (Holm over the run) or, where those keep nothing, from intervals that do not
    overlap; never assumed."""
    from evals.stats import ALL_QUESTIONS, comparison_sentence

    if comparisons is not None and not comparisons.empty:
        kept = comparisons[
            (comparisons["question"] == ALL_QUESTIONS)
            & (comparisons["score"] == judge)
            & (comparisons["p_adjusted"] < 0.05)
            & (comparisons["difference"] < 0)
        ]
        if not kept.empty:
            names = ", ".join(repr(str(g)) for g in kept["group"])
            sentences = "; ".join(comparison_sentence(r) for r in kept.to_dict("records"))
            where = f"sits below the base model over all questions ({sentences})"
            return f"On '{judge}', {names} {where}: {_LESSON}"
    below = sorted({low for low, _ in separated_groups(scores, judge)})
    if not below:
        return f"No group's '{judge}' interval is clear of the others'."
    tests = f"{len(comparisons)} " if comparisons is not None else ""
    return (
        f"On '{judge}', {', '.join(repr(g) for g in below)} sits below other groups with "
        f"non-overlapping 95% intervals (Holm's correction over the run's {tests}comparisons "
        f"keeps no difference from the base model): {_LESSON}"
    )
