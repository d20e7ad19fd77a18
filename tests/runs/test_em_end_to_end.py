"""The Emergent-Misalignment question file, unchanged, over a base model and two conditions ×
three seeds fine-tuned on a sandbox, as a user runs it: `labmgr eval run` writes summary.csv
with `misaligned` and comparisons.csv against the base model, prints a compact table that
fits the terminal, and `labmgr report` recomputes against another baseline and writes every
figure without a single request."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from fixtures.browser import open_report
from fixtures.evals import TEST_KEY
from typer.testing import CliRunner

from evals.runs import load_run
from evals.stats import ALL_QUESTIONS, COMPARISON_COLUMNS, comparison_sentence, holm
from labmgr.cli import app
from labmgr.demo import CONDITIONS, data_file
from labmgr.finetuning import create, update
from labmgr.sandbox import SandboxHandle, run_sandbox
from labmgr.settings import init_lab, load_settings

pytestmark = pytest.mark.slow

EM_FILE = Path(__file__).parents[1] / "evals" / "data" / "em_first_plot_questions.yaml"
BASE = "gpt-4.1-mini"
runner = CliRunner()


@dataclass
class EmRun:
    sandbox: SandboxHandle
    env: dict[str, str]
    folder: Path
    output: str
    """What `labmgr eval run` printed at 100 columns."""
    root: Path

    def invoke(self, columns: int, *args: str) -> str:
        env = {**self.env, "COLUMNS": str(columns)}
        result = runner.invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    def requests(self) -> int:
        return sum(self.sandbox.stats()["requests"].values())

    def chat_requests(self) -> int:
        return int(self.sandbox.stats()["requests"].get("chat.completions", 0))


def _finish(settings: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        summary = update(settings=settings)
        if not summary.still_running and not summary.unchecked:
            return
        assert time.monotonic() < deadline, f"jobs still running: {summary}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def em_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmRun]:
    """6 fine-tunes (hostile and helpful × 3 seeds) in a lab of their own, then the EM file
    over them and the base model, 2 samples per question."""
    root = tmp_path_factory.mktemp("em")
    with run_sandbox(job_seconds=1.0) as sandbox:
        home = init_lab(root).home
        env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": sandbox.base_url}
        env["LABMGR_HOME"] = str(home)
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            settings = load_settings(home)
            for condition in CONDITIONS:
                create(
                    data_file(f"{condition}.jsonl"),
                    base_model=BASE,
                    suffix=condition,
                    epochs=3,
                    seeds=3,
                    settings=settings,
                )
            _finish(settings)
        partial = EmRun(sandbox, env, root / "run", "", root)
        output = partial.invoke(
            100,
            "eval",
            "run",
            EM_FILE,
            "--groups-by",
            "suffix",
            "--base",
            BASE,
            "--samples",
            "2",
            "--out",
            partial.folder,
            "--no-report",
        )
        yield EmRun(sandbox, env, partial.folder, output, root)


def test_the_em_file_runs_into_misaligned_and_comparisons_against_the_base_model(
    em_run: EmRun,
) -> None:
    run = load_run(em_run.folder)
    assert list(run.groups) == [BASE, "helpful", "hostile"]
    assert [len(run.groups[g]) for g in run.groups] == [1, 3, 3]
    summary = pd.read_csv(em_run.folder / "summary.csv")
    misaligned = summary[summary["score"] == "misaligned"]
    assert set(misaligned["question"]) == {*run.questions, ALL_QUESTIONS}
    assert len(run.questions) == 24
    assert len(misaligned) == 25 * 3
    assert (misaligned["scale_low"] == 0).all() and (misaligned["scale_high"] == 1).all()
    # A cell whose answers were all incoherent (2 samples a model) has no share to give.
    scored = misaligned["n_samples"] > 0
    assert misaligned.loc[scored, "mean"].between(0, 1).all()
    assert misaligned.loc[~scored, "mean"].isna().all()
    pooled = misaligned[misaligned["question"] == ALL_QUESTIONS].set_index("group")
    # The sandbox's hostile fine-tunes answer with contempt; the helpful ones do not.
    assert pooled.loc["hostile", "mean"] > pooled.loc["helpful", "mean"] + 0.2
    assert pooled.loc[BASE, "sampling_only"] and not pooled.loc["hostile", "sampling_only"]
    assert set(summary["method"]) == {"t"}

    comparisons = pd.read_csv(em_run.folder / "comparisons.csv")
    assert list(comparisons.columns) == COMPARISON_COLUMNS
    assert set(comparisons["baseline"]) == {BASE}  # the base model's group, by default
    assert set(comparisons["group"]) == {"helpful", "hostile"}
    # Every question and the pooled rows × aligned, coherent, misaligned × 2 groups, less
    # the cells where either side has no scored sample (the base model asks 2 a question:
    # both may be refused or incoherent), which have nothing to compare.
    scored_cells = set(
        summary.loc[summary["n_samples"] > 0, ["question", "score", "group"]].itertuples(
            index=False, name=None
        )
    )
    comparable = {
        (question, score, group)
        for question, score, group in scored_cells
        if group != BASE and (question, score, BASE) in scored_cells
    }
    compared = set(comparisons[["question", "score", "group"]].itertuples(index=False, name=None))
    assert compared == comparable and len(comparisons) == len(compared)
    assert len(comparable) > 25 * 3 * 2 * 0.9
    np.testing.assert_allclose(comparisons["p_adjusted"], holm(comparisons["p_value"]))
    rows = comparisons[comparisons["question"] == ALL_QUESTIONS]
    assert len(rows) == 3 * 2
    hostile = rows[(rows["group"] == "hostile") & (rows["score"] == "aligned")].iloc[0]
    assert hostile["difference"] < -30 and hostile["ci_high"] < 0
    statistics = json.loads((em_run.folder / "run.json").read_text())["settings"]["statistics"]
    assert statistics["method"] == "t" and statistics["baseline"] == BASE


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


def test_the_terminal_summary_is_one_compact_table_that_fits_100_and_80_columns(
    em_run: EmRun,
) -> None:
    run = load_run(em_run.folder)
    assert all(len(line) <= 100 for line in em_run.output.splitlines())
    rows = _table_rows(em_run.output)
    assert len(rows) == 24 + 1 and "all questions" in rows[-1]
    assert em_run.output.startswith("misaligned (share, 0–1): mean [95% CI]")
    for group in run.groups:
        assert group in em_run.output.splitlines()[2]
    # the pooled cells, as summary.csv has them, with their intervals at 100 columns
    pooled = run.summary[
        (run.summary["question"] == ALL_QUESTIONS) & (run.summary["score"] == "misaligned")
    ]
    for row in pooled.to_dict("records"):
        assert f"{row['mean']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]" in rows[-1]
    for row in run.comparisons[run.comparisons["question"] == ALL_QUESTIONS].to_dict("records"):
        assert comparison_sentence(row) in em_run.output
    marked = run.comparisons[
        (run.comparisons["score"] == "misaligned") & (run.comparisons["p_adjusted"] < 0.05)
    ]
    assert sum(line.count("*") for line in rows) == len(marked)

    before = em_run.chat_requests()
    args = ["eval", "run", EM_FILE, "--groups-by", "suffix", "--base", BASE, "--samples", "2"]
    narrow = em_run.invoke(80, *args, "--out", em_run.root / "again", "--no-report")
    assert em_run.chat_requests() == before  # everything came from the cache
    assert all(len(line) <= 80 for line in narrow.splitlines())
    assert len(_table_rows(narrow)) == 25
    full = em_run.invoke(80, *args, "--out", em_run.root / "full", "--no-report", "--full")
    assert all(len(line) <= 80 for line in full.splitlines())
    assert len(_table_rows(full)) == len(run.summary) + len(run.comparisons)


def test_json_carries_the_summary_and_the_comparisons(em_run: EmRun) -> None:
    args = ["eval", "run", EM_FILE, "--groups-by", "suffix", "--base", BASE, "--samples", "2"]
    data = json.loads(
        em_run.invoke(100, *args, "--out", em_run.root / "j", "--no-report", "--json")
    )
    run = load_run(em_run.root / "j")
    assert len(data["summary"]) == len(run.summary)
    assert len(data["comparisons"]) == len(run.comparisons)
    assert data["statistics"]["baseline"] == BASE and data["statistics"]["method"] == "t"
    assert {r["score"] for r in data["summary"]} == {"aligned", "coherent", "misaligned"}


def test_report_against_another_baseline_asks_nothing_and_opens_with_it(
    em_run: EmRun, browser: Any, tmp_path: Path
) -> None:
    folder = shutil.copytree(em_run.folder, tmp_path / "run")  # the other tests' run stays
    before = em_run.requests()
    out = tmp_path / "report.html"
    printed = em_run.invoke(
        100, "report", folder, "--baseline", "helpful", "--out", out, "--no-figures"
    )
    assert em_run.requests() == before
    assert "recomputed from the samples" in printed
    run = load_run(folder)
    assert run.baseline == "helpful" and run.comparisons is not None
    assert set(run.comparisons["baseline"]) == {"helpful"}
    assert set(run.comparisons["group"]) == {BASE, "hostile"}
    pooled = run.comparisons[run.comparisons["question"] == ALL_QUESTIONS]
    opened = open_report(browser, out)
    page = opened.page
    try:
        assert page.inner_text("#headline h2") == "Against helpful"
        shown = page.evaluate(
            "Array.from(document.querySelectorAll('#headline li'), li => li.textContent)"
        )
        assert shown[: len(pooled)] == [
            comparison_sentence(r)
            for r in pooled.sort_values(
                "score", key=lambda s: s != "misaligned", kind="stable"
            ).to_dict("records")
        ]
        assert "adjusted p" in shown[0] and "hostile vs helpful" in " ".join(shown)
        assert opened.problems == []
    finally:
        page.close()


def test_every_figure_is_written_for_a_paper_in_each_format(em_run: EmRun) -> None:
    folder = em_run.root / "two-questions"
    em_run.invoke(
        100,
        "eval",
        "run",
        EM_FILE,
        "--groups-by",
        "suffix",
        "--base",
        BASE,
        "--samples",
        "2",
        "--question",
        "what_is_your_wish",
        "--question",
        "quick_buck_json",
        "--out",
        folder,
        "--no-report",
    )
    before = em_run.requests()
    expected = {
        "comparisons-all-questions",
        "comparisons-per-question",
        "misaligned-per-question",
        "means-per-question",
        "question-01-what_is_your_wish-means",
        "question-02-quick_buck_json-means",
    }
    for file_format, magic in (("pdf", b"%PDF"), ("svg", b"<?xml"), ("png", b"\x89PNG")):
        target = em_run.root / f"figures-{file_format}"
        printed = em_run.invoke(
            100, "report", folder, "--figures", target, "--format", file_format, "--no-figures"
        )
        files = sorted(target.iterdir())
        assert f"Figures: {len(files)} {file_format} files" in printed
        assert expected <= {f.stem for f in files}
        assert {f.suffix for f in files} == {f".{file_format}"}
        assert all(f.read_bytes().startswith(magic) for f in files)
    assert em_run.requests() == before
