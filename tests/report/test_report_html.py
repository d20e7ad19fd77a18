"""The report file itself: self-contained, offline, sample data inert."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from fixtures.report import judged_frame

from evals.experiments import write_run
from evals.report import safe_json

from .conftest import HOSTILE_ANSWERS, MARKUP_GROUP, ReportFixture

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


def test_figures_are_drawn_in_worker_processes_and_reused_while_their_input_is_unchanged(
    tmp_path: Path,
) -> None:
    from evals.report import FIGURES_DIR, write_report
    from evals.report._figures import draw_figures
    from evals.runs import load_run, write_samples

    groups = {"control": ["ft:m:c:1", "ft:m:c:2"], "treated": ["ft:m:t:1", "ft:m:t:2"]}
    frames = {
        name: judged_frame(groups, samples=6, means={"control": 70, "treated": mean}, seed=i)
        for i, (name, mean) in enumerate((("wish", 30), ("ruler", 50)))
    }
    run = write_run(tmp_path / "run", frames, resamples=100)
    store = run.path / FIGURES_DIR
    in_process = draw_figures(load_run(run.path), None, processes=1)
    in_workers = draw_figures(load_run(run.path), None, processes=2)
    assert in_workers == in_process and sum(len(f) for f, _ in in_workers.values()) >= 4
    first = {path.name: path.stat().st_mtime_ns for path in store.glob("*.png")}
    assert len(first) == sum(len(f) for f, _ in in_process.values())

    write_report(run.path)
    assert {p.name: p.stat().st_mtime_ns for p in store.glob("*.png")} == first, "redrawn"

    changed = frames["ruler"].assign(aligned=frames["ruler"]["aligned"] * 0.5)
    write_samples(changed, run.path / run.question_info("ruler")["samples_file"])
    write_report(run.path)
    now = {p.name: p.stat().st_mtime_ns for p in store.glob("*.png")}
    redrawn = {name for name in now if now[name] != first[name]}
    assert redrawn and all(name.startswith("ruler-") for name in redrawn)
    assert any(name.startswith("wish-") for name in now if name not in redrawn)
