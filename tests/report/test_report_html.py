"""The report file itself: self-contained, offline, sample data inert."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fixtures.report import judged_frame

from evals.report import run_plans, safe_json, write_figures, write_report
from evals.report._plans import question_figure_prefix
from evals.runs import Run, load_run
from evals.runs import write_run as write_run_folder
from evals.stats import ALL_QUESTIONS

from .conftest import HOSTILE_ANSWERS, MARKUP_GROUP, ComparedReport, ReportFixture


def write_run(out: Path, frames: dict[str, Any], **options: Any) -> Run:
    """A run folder from frames, then its report."""
    run = write_run_folder(out, frames, **options)
    write_report(run, run.path / "report.html")
    return run


_DATA = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def test_sample_data_cannot_close_its_script_element() -> None:
    value = {"answer": "</script><script>alert(1)</script><!-- & \u2028", "n": [1.5, None]}
    encoded = safe_json(value)
    assert not set("<>&") & set(encoded)
    assert json.loads(encoded) == value


def test_the_report_is_one_offline_file(small_report: ReportFixture) -> None:
    html = small_report.path.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(http" not in html
    images = re.findall(r"<img [^>]*src='([^']*)'", html)
    assert images and all(src.startswith("data:image/png;base64,") for src in images)


def test_the_sample_data_holds_every_answer_verbatim(small_report: ReportFixture) -> None:
    html = small_report.path.read_text(encoding="utf-8")
    (block,) = _DATA.findall(html)
    assert "<" not in block
    data = json.loads(block)
    assert set(HOSTILE_ANSWERS) <= set(data["rows"]["answer"])
    assert MARKUP_GROUP in data["groups"]
    assert len(data["rows"]["answer"]) == len(small_report.frame)
    assert data["scores"] == ["aligned", "coherent"]


def test_only_the_reports_own_script_may_run(small_report: ReportFixture) -> None:
    html = small_report.path.read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy
    assert "innerHTML" not in scripts[0] and "insertAdjacentHTML" not in scripts[0]


def test_checkpoint_steps_in_the_run_add_a_training_step_figure(tmp_path: Path) -> None:
    models = ["ft:m:a:ckpt-10", "ft:m:a:ckpt-20", "ft:m:a"]
    frame = judged_frame({"alpha": models}, samples=4)
    facts = {
        m: {"job": "ftjob-a", "step": step} for m, step in zip(models, [10, 20, 30], strict=True)
    }
    run = write_run(tmp_path / "run", {"wish": frame}, models=facts, resamples=100)
    html = (run.path / "report.html").read_text(encoding="utf-8")
    assert "aligned against training step" in html


def test_the_title_names_what_was_asked_not_the_folder_twice(tmp_path: Path) -> None:
    frame = judged_frame({"g": ["m-1", "m-2"]}, samples=4)
    info = {"source": "labmgr demo", "started": "2026-03-01T12:00:00+00:00"}
    run = write_run(tmp_path / "run", {"wish": frame}, resamples=50, info=info)
    html = (run.path / "report.html").read_text(encoding="utf-8")
    assert "<title>Eval report: labmgr demo (2026-03-01)</title>" in html
    assert "Eval run run" not in html
    from_file = write_run(
        tmp_path / "other", {"wish": frame}, resamples=50, info={"source": "q/em.yaml"}
    )
    assert "<title>Eval report: em.yaml</title>" in (from_file.path / "report.html").read_text()


def test_without_a_baseline_the_report_says_how_to_compare_the_groups(
    small_report: ReportFixture,
) -> None:
    html = small_report.path.read_text(encoding="utf-8")
    headline = html.index("<section id='headline'>")
    assert headline < html.index("<section id='summary'>")
    assert "No baseline" in html and "labmgr report RUN --baseline GROUP" in html


def test_captions_and_notes_say_what_the_interval_is(compared_report: ComparedReport) -> None:
    html = compared_report.path.read_text(encoding="utf-8")
    assert html.count("a t interval over the models&#39; (seeds&#39;) means") >= 3
    assert "reflects sampling noise only" in html
    assert "hierarchical bootstrap over models" not in html


def test_the_headline_figures_draw_each_score_on_its_own_scale(
    compared_report: ComparedReport,
) -> None:
    run = load_run(compared_report.path.parent)
    plans = {plan.name: plan for plan in run_plans(run)}
    assert list(plans)[:4] == [
        "comparisons-all-questions",
        "comparisons-per-question",
        "misaligned-per-question",
        "means-per-question",
    ]
    assert "question-02-b_ruler_b-means" in plans  # names are safe for any file system
    differences = plans["comparisons-all-questions"].draw()
    limits = {ax.get_title(): ax.get_xlim() for ax in differences.axes if ax.get_title()}
    assert limits == {
        "aligned": (-100.0, 100.0),
        "coherent": (-100.0, 100.0),
        "misaligned": (-1.0, 1.0),
    }
    paper = plans["misaligned-per-question"].draw()
    assert paper.axes[0].get_ylim() == (0.0, 1.0)
    ticks = [t.get_text() for t in paper.axes[0].get_xticklabels()]
    assert ticks[-1] == ALL_QUESTIONS and len(ticks) == 3
    means = plans["question-01-wish-means"].draw()
    assert {ax.get_title(): ax.get_xlim() for ax in means.axes if ax.get_title()} == {
        "aligned": (0.0, 100.0),
        "coherent": (0.0, 100.0),
        "misaligned": (0.0, 1.0),
    }


@pytest.mark.parametrize(
    ("file_format", "magic"), [("pdf", b"%PDF"), ("svg", b"<?xml"), ("png", b"\x89PNG")]
)
def test_every_figure_is_written_as_a_file_with_a_stable_name(
    compared_report: ComparedReport, tmp_path: Path, file_format: str, magic: bytes
) -> None:
    run = load_run(compared_report.path.parent)
    written = write_figures(run, tmp_path / "figures", file_format=file_format)  # type: ignore[arg-type]
    assert written.problems == []
    names = [path.name for path in written.files]
    assert names == [f"{plan.name}.{file_format}" for plan in run_plans(run)]
    assert f"misaligned-per-question.{file_format}" in names
    for path in written.files:
        assert path.read_bytes().startswith(magic), path


def test_figures_are_drawn_in_worker_processes_and_reused_while_their_input_is_unchanged(
    tmp_path: Path,
) -> None:
    from evals.report import FIGURES_DIR, draw_figures, write_report
    from evals.runs import load_run, write_samples

    groups = {"control": ["ft:m:c:1", "ft:m:c:2"], "treated": ["ft:m:t:1", "ft:m:t:2"]}
    frames = {
        name: judged_frame(groups, samples=6, means={"control": 70, "treated": mean}, seed=i)
        for i, (name, mean) in enumerate((("wish", 30), ("ruler", 50)))
    }
    run = write_run(tmp_path / "run", frames, resamples=100)
    store = run.path / FIGURES_DIR
    loaded = load_run(run.path)
    in_process = draw_figures(run_plans(loaded), processes=1)
    in_workers = draw_figures(run_plans(loaded), processes=2)
    assert in_workers == in_process and len(in_workers.embedded) >= 4
    first = {path.name: path.stat().st_mtime_ns for path in store.glob("*.png")}
    assert len(first) == len(in_process.embedded)

    write_report(run.path)
    assert {p.name: p.stat().st_mtime_ns for p in store.glob("*.png")} == first, "redrawn"

    changed = frames["ruler"].assign(aligned=frames["ruler"]["aligned"] * 0.5)
    write_samples(changed, run.path / run.question_info("ruler")["samples_file"])
    write_report(run.path)
    now = {p.name: p.stat().st_mtime_ns for p in store.glob("*.png")}
    redrawn = {name for name in now if now[name] != first[name]}
    ruler = question_figure_prefix(loaded, "ruler")
    assert redrawn and all(name.startswith(ruler) for name in redrawn)
    assert any(name.startswith(question_figure_prefix(loaded, "wish")) for name in now)
    assert not any(name.startswith("comparisons-") for name in redrawn), "headline redrawn"

    # `labmgr report` (report_run) reuses them too, and redraws only what its input changed.
    from evals.experiments import report_run

    report_run(run.path)
    assert {p.name: p.stat().st_mtime_ns for p in store.glob("*.png")} == now, "redrawn"
    elsewhere = tmp_path / "elsewhere"
    report_run(run.path, out=elsewhere / "report.html")
    kept = {p.name: p.stat().st_mtime_ns for p in (elsewhere / FIGURES_DIR).glob("*.png")}
    assert kept.keys() == now.keys()
    report_run(run.path, out=elsewhere / "report.html")
    assert {p.name: p.stat().st_mtime_ns for p in (elsewhere / FIGURES_DIR).glob("*.png")} == kept
    report_run(run.path, baseline="control")  # comparisons computed again: the headline moves
    after = {p.name: p.stat().st_mtime_ns for p in store.glob("*.png")}
    moved = {name for name in after if after[name] != now.get(name)}
    assert any(name.startswith("comparisons-") for name in moved)


def test_a_run_that_records_no_method_is_described_as_its_analysis_computes_it(
    tmp_path: Path,
) -> None:
    """A hand-made or old run.json without `statistics.method`: the report names the
    interval `analyze_run` would compute for it (the default), not another method."""
    frame = judged_frame({"alpha": ["m-1", "m-2", "m-3"]}, samples=4)
    run = write_run_folder(tmp_path / "run", {"wish": frame}, resamples=50)
    info = json.loads((run.path / "run.json").read_text(encoding="utf-8"))
    del info["settings"]["statistics"]["method"]
    (run.path / "run.json").write_text(json.dumps(info), encoding="utf-8")
    html = write_report(run.path, figures=False).read_text(encoding="utf-8")
    assert "a t interval over the models&#39; (seeds&#39;) means" in html
    assert "hierarchical bootstrap" not in html
