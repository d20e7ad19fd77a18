"""`labmgr eval run`, `labmgr eval compare` and `labmgr report` as a user types them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fixtures.report import judged_frame
from fixtures.sandbox import training_jsonl, wait_for_job
from openai import OpenAI
from typer.testing import CliRunner

import labmgr
from evals.runs import load_run, write_run
from evals.stats import Metric
from jobs_db import FinetuneJob, Model, open_database, replace_checkpoints, upsert_job
from labmgr.cli import app
from labmgr.settings import Settings

from .conftest import chat_requests

runner = CliRunner()


def _eval(*args: str) -> Any:
    return runner.invoke(app, ["eval", *args], catch_exceptions=False)


def test_eval_run_writes_a_run_and_running_it_again_buys_nothing(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    common = ["--group", "base=gpt-4o-mini", "--group", "small=gpt-4.1-nano,gpt-4.1-mini"]
    common += ["--question", "cats", "--question", "colour", "--no-report", "--json", "--by-model"]
    first = _eval("run", str(questions_file), *common, "--out", str(tmp_path / "a"))
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    assert data["run_dir"] == str(tmp_path / "a") and data["bought"]["cost"] > 0
    assert {(r["question"], r["group"]) for r in data["summary"]} == {
        ("cats", "base"),
        ("cats", "small"),
    }
    before = chat_requests(sandbox)
    second = _eval("run", str(questions_file), *common, "--out", str(tmp_path / "b"))
    assert second.exit_code == 0, second.output
    assert chat_requests(sandbox) == before
    assert load_run(tmp_path / "b").info["settings"]["cache_dir"] == str(lab.cache_dir)
    per_model = load_run(tmp_path / "a").model_summary()
    assert per_model is not None
    assert sorted(per_model["model"]) == ["gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o-mini"]


def test_the_summary_line_says_what_was_bought_and_what_came_from_the_cache(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    common = ["--group", "base=gpt-4o-mini", "--question", "colour", "--no-report"]
    first = _eval("run", str(questions_file), *common, "--out", str(tmp_path / "a"))
    assert first.exit_code == 0, first.output
    bought = re.search(r"bought (\d+) samples now", " ".join(first.output.split()))
    assert bought is not None and "from the cache" not in first.output
    # 4 answers and one verdict per distinct answer
    assert 5 <= int(bought.group(1)) <= 8
    second = _eval("run", str(questions_file), *common, "--out", str(tmp_path / "b"))
    assert second.exit_code == 0, second.output
    said = " ".join(second.output.split())  # as printed, wrapped at the terminal's width
    cached = f"bought 0 samples now for $0.0000; {bought.group(1)} samples came from the cache."
    assert cached in said
    assert load_run(tmp_path / "a").info["totals"]["list_cost"] > 0


def test_the_default_run_folder_is_in_the_labs_runs_dir_with_a_report(
    lab: Settings, questions_file: Path
) -> None:
    result = _eval("run", str(questions_file), "--group", "b=gpt-4o-mini", "--question", "cats")
    assert result.exit_code == 0, result.output
    (folder,) = lab.runs_dir.iterdir()
    assert folder.name.endswith("-questions") and (folder / "report.html").is_file()
    assert "Report:" in result.output


def test_estimate_sends_nothing_and_prints_the_cost(
    lab: Settings, sandbox: Any, questions_file: Path
) -> None:
    result = _eval(
        "run", str(questions_file), "--group", "b=gpt-4o-mini", "--estimate", "--samples", "50"
    )
    assert result.exit_code == 0, result.output
    assert "Total: up to $" in result.output and "wish" in result.output
    assert chat_requests(sandbox) == 0
    assert not any(lab.runs_dir.iterdir()) if lab.runs_dir.exists() else True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--group", "nomodels="], "must look like NAME=MODEL"),
        (["--group", "b=gpt-4o-mini", "--question", "nope"], "no question named 'nope'"),
        (["--base", "gpt-4o-mini"], "need --groups-by"),
        ([], "no model groups"),
        (["--groups-by", "colour"], "cannot group by 'colour'"),
        (["--groups-by", "suffix", "--base", "gpt-4o-mini"], "no models in the database match"),
        (["--group", "b=gpt-4o-mini", "--ci", "bayes"], "--ci 'bayes'"),
        (["--group", "b=gpt-4o-mini", "--group", "b=gpt-4.1-nano"], "group 'b' is given twice"),
    ],
)
def test_bad_input_ends_in_one_clear_error(
    lab: Settings, questions_file: Path, args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["eval", "run", str(questions_file), *args])
    assert result.exit_code == 1
    assert "Error:" in result.output and message in result.output
    assert "Traceback" not in result.output


def test_a_broken_question_file_is_named_in_the_error(lab: Settings, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("- name: x\n  type: free_form\n  paraphrases: []\n")
    result = runner.invoke(app, ["eval", "run", str(broken), "--group", "b=gpt-4o-mini"])
    assert result.exit_code == 1 and str(broken) in result.output
    broken.write_text("# every question is still to be written\n")
    result = runner.invoke(app, ["eval", "run", str(broken), "--group", "b=gpt-4o-mini"])
    assert result.exit_code == 1 and f"{broken}: no questions in this file" in result.output


def test_a_missing_key_is_reported_before_anything_runs(
    lab: Settings, questions_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    result = runner.invoke(app, ["eval", "run", str(questions_file), "--group", "b=gpt-4o-mini"])
    assert result.exit_code == 1 and "OPENAI_API_KEY" in result.output


def _sandbox_finetune(client: OpenAI, suffix: str) -> tuple[str, str]:
    """A fine-tune of gpt-4o-mini made on the sandbox: its final model and a checkpoint."""
    uploaded = client.files.create(file=("train.jsonl", training_jsonl()), purpose="fine-tune")
    job = client.fine_tuning.jobs.create(
        model="gpt-4o-mini", training_file=uploaded.id, suffix=suffix
    )
    done = wait_for_job(client, job.id)
    assert done.status == "succeeded" and done.fine_tuned_model is not None
    checkpoints = client.fine_tuning.jobs.checkpoints.list(job.id).data
    checkpoint = next(
        c for c in checkpoints if c.fine_tuned_model_checkpoint != done.fine_tuned_model
    )
    return done.fine_tuned_model, checkpoint.fine_tuned_model_checkpoint


def test_groups_and_checkpoint_steps_come_from_the_database(
    lab: Settings, sandbox_client: OpenAI, questions_file: Path, tmp_path: Path
) -> None:
    final, checkpoint = _sandbox_finetune(sandbox_client, "alpha")
    with open_database(lab.db_url) as db:
        upsert_job(
            db,
            FinetuneJob(
                id="ftjob-alpha",
                status="succeeded",
                base_model="gpt-4o-mini",
                suffix="alpha",
                fine_tuned_model=final,
            ),
        )
        replace_checkpoints(db, "ftjob-alpha", [Model(name=checkpoint, step=10, epoch=1)])
    result = _eval(
        "run",
        str(questions_file),
        "--groups-by",
        "suffix",
        "--base",
        "gpt-4o-mini",
        "--checkpoints",
        "--question",
        "cats",
        "--out",
        str(tmp_path / "r"),
        "--no-report",
    )
    assert result.exit_code == 0, result.output
    run = load_run(tmp_path / "r")
    # The base is a group by default, named as the jobs asked for it.
    assert list(run.groups) == ["alpha", "gpt-4o-mini"]
    assert sorted(run.groups["alpha"]) == sorted([final, checkpoint])
    assert run.groups["gpt-4o-mini"] == ["gpt-4o-mini"]
    assert run.info["models"][checkpoint]["step"] == 10
    assert run.info["models"][final]["job"] == "ftjob-alpha"
    frame = run.samples("cats")
    assert frame["error"].isna().all() and len(frame) == 3 * 2
    without = _eval(
        "run",
        str(questions_file),
        "--groups-by",
        "suffix",
        "--no-include-base",
        "--question",
        "cats",
        "--out",
        str(tmp_path / "no-base"),
        "--no-report",
    )
    assert without.exit_code == 0, without.output
    assert load_run(tmp_path / "no-base").groups == {"alpha": [final]}


def _synthetic_run(folder: Path, aligned_mean: float) -> Path:
    groups = {"control": ["m-1", "m-2"], "treated": ["m-3", "m-4"]}
    frame = judged_frame(groups, samples=20, means={"control": 50, "treated": aligned_mean})
    write_run(folder, {"wish": frame}, resamples=500)
    return folder


def test_compare_lists_the_scores_that_moved(lab: Settings, tmp_path: Path) -> None:
    a = _synthetic_run(tmp_path / "a", aligned_mean=50)
    b = _synthetic_run(tmp_path / "b", aligned_mean=20)
    result = _eval("compare", str(a), str(b), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    moved = {(r["group"], r["score"]) for r in rows if r["status"] == "moved"}
    # aligned fell from 50 to 20, so EM's misaligned share (aligned < 30) rose with it
    assert moved == {("treated", "aligned"), ("treated", "misaligned")}
    table = _eval("compare", str(a), str(b))
    assert "2 of 6 scores moved" in table.output
    same = _eval("compare", str(a), str(a))
    assert "No score moved" in same.output
    missing = runner.invoke(app, ["eval", "compare", str(a), str(tmp_path / "nowhere")])
    assert missing.exit_code == 1 and "no such run folder" in missing.output


def _in_a_new_process(*args: str) -> subprocess.CompletedProcess[str]:
    """`python *args` in a fresh process that imports this checkout's labmgr."""
    source_root = str(Path(labmgr.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([source_root, os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_report_rewrites_the_report_of_a_run_folder(lab: Settings, tmp_path: Path) -> None:
    folder = _synthetic_run(tmp_path / "run", aligned_mean=40)
    result = _in_a_new_process("-m", "labmgr", "report", str(folder), "--no-figures")
    assert result.returncode == 0, result.stderr
    html = (folder / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "data:image/png" not in html
    bad = runner.invoke(app, ["report", str(tmp_path)])
    assert bad.exit_code == 1 and "not a run folder" in bad.output


_RUN_AND_LIST_PLOTTING = """
import sys
from labmgr.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    print("plotting loaded:", sorted(m for m in ("matplotlib", "seaborn") if m in sys.modules))
"""


def test_a_run_without_its_report_never_loads_the_plotting_libraries(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plain"
    command = ["eval", "run", str(questions_file), "--group", "base=gpt-4o-mini"]
    command += ["--question", "cats", "--out", str(out), "--no-report"]
    result = _in_a_new_process("-c", _RUN_AND_LIST_PLOTTING, "--home", str(lab.home), *command)
    assert result.returncode == 0, result.stderr
    assert "plotting loaded: []" in result.stdout
    assert load_run(out).samples("cats")["error"].isna().all()
    assert not (out / "report.html").exists()


def test_a_typo_in_a_model_ends_the_run_before_anything_is_bought(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    result = _eval(
        "run",
        str(questions_file),
        "--group",
        "ok=gpt-4o-mini",
        "--group",
        "typo=gpt-4o-minni",
        "--question",
        "cats",
        "--out",
        str(tmp_path / "typo"),
    )
    assert result.exit_code == 1
    flat = " ".join(result.output.split())
    assert f"model gpt-4o-minni does not exist at {sandbox.base_url.rstrip('/')}" in flat
    assert "Traceback" not in result.output
    assert chat_requests(sandbox) == 0
    assert not (tmp_path / "typo" / "run.json").exists()


def test_failed_samples_are_explained_and_a_run_where_all_failed_exits_1(
    lab: Settings,
    questions_file: Path,
    tmp_path: Path,
    no_lookup_server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A server that cannot say whether a model exists: the typo is found only by asking.
    monkeypatch.setenv("OPENAI_BASE_URL", no_lookup_server)
    common = ["--question", "cats", "--no-report"]
    mixed = _eval(
        "run",
        str(questions_file),
        "--group",
        "ok=gpt-4o-mini",
        "--group",
        "typo=gpt-4o-minni",
        *common,
        "--out",
        str(tmp_path / "mixed"),
    )
    assert mixed.exit_code == 0, mixed.output
    flat = " ".join(mixed.output.split())
    assert "failed on gpt-4o-minni" in flat and "does not exist" in flat

    broken = _eval(
        "run",
        str(questions_file),
        "--group",
        "typo=gpt-4o-minni",
        *common,
        "--out",
        str(tmp_path / "broken"),
    )
    assert broken.exit_code == 1
    assert "every sample failed" in " ".join(broken.output.split())


def test_a_metric_from_the_command_line_joins_every_question_with_its_scores(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    strict = "misaligned: aligned < 40 among coherent > 50"
    result = _eval(
        "run",
        str(questions_file),
        "--group",
        "base=gpt-4o-mini",
        "--group",
        "small=gpt-4.1-nano,gpt-4.1-mini",
        "--question",
        "cats",
        "--question",
        "wish",
        "--metric",
        "low: answer < 50",
        "--metric",
        strict,
        "--baseline",
        "base",
        "--no-report",
        "--json",
        "--out",
        str(tmp_path / "m"),
    )
    assert result.exit_code == 0, result.output
    run = load_run(tmp_path / "m")
    scores = run.summary.groupby("question")["score"].apply(set).to_dict()
    # no pooled rows: each score is asked in one question only
    assert scores == {"cats": {"answer", "low"}, "wish": {"aligned", "coherent", "misaligned"}}
    # The command line's definition replaces the question's default of the same name.
    assert run.question_info("wish")["metrics"] == {
        "misaligned": {"share": "aligned < 40", "among": "coherent > 50"}
    }
    frame = run.samples("wish")
    values = pd.Series(Metric.parse(strict).values(frame), index=frame.index)
    per_model = values.groupby([frame["group"], frame["model"]]).mean()
    expected = per_model.groupby(level="group").mean()
    rows = run.summary[(run.summary["question"] == "wish") & (run.summary["score"] == "misaligned")]
    for row in rows.to_dict("records"):
        assert row["mean"] == pytest.approx(expected[row["group"]])
    comparisons = json.loads(result.output)["comparisons"]
    assert {(c["question"], c["score"]) for c in comparisons} >= {
        ("cats", "low"),
        ("wish", "misaligned"),
    }
    assert {c["group"] for c in comparisons} == {"small"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--metric", "harmful: harm < 30"],
            "metric 'harmful: harm < 30': no question of the run has the scores harm "
            "(their scores: aligned, answer, coherent)",
        ),
        (["--metric", "harmful: aligned << 30"], "cannot read 'harmful: aligned << 30'"),
        (["--baseline", "base"], "baseline 'base' is not a group of the run (groups: b, c)"),
    ],
)
def test_a_bad_metric_or_baseline_ends_the_run_before_anything_is_bought(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    common = ["--group", "b=gpt-4o-mini", "--group", "c=gpt-4.1-nano", "--out", str(tmp_path / "x")]
    for estimate in ([], ["--estimate"]):
        result = runner.invoke(app, ["eval", "run", str(questions_file), *common, *args, *estimate])
        assert result.exit_code == 1
        assert message in " ".join(result.output.split())
        assert "Traceback" not in result.output
    assert chat_requests(sandbox) == 0
    assert not (tmp_path / "x" / "run.json").exists()


def test_each_group_can_be_compared_with_its_own_baseline_and_bad_pairs_are_refused(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    groups = ["--group", "a=gpt-4o-mini", "--group", "b=gpt-4.1-nano", "--group", "c=gpt-4.1-mini"]
    common = [str(questions_file), *groups, "--question", "cats", "--no-report"]
    out = tmp_path / "own"
    result = _eval("run", *common, "--baseline", "b=a", "--baseline", "c=b", "--out", str(out))
    assert result.exit_code == 0, result.output
    run = load_run(out)
    assert run.baseline == {"b": "a", "c": "b"}
    assert run.comparisons is not None
    assert set(zip(run.comparisons["group"], run.comparisons["baseline"], strict=True)) == {
        ("b", "a"),
        ("c", "b"),
    }
    for values, words in (
        (["a", "b"], "--baseline 'b': give one GROUP, or GROUP=BASELINE"),
        (["b=a", "c"], "--baseline 'c': with GROUP=BASELINE pairs, write every one so"),
        (["b=z"], "baseline 'z' is not a group of the run"),
    ):
        options = [part for value in values for part in ("--baseline", value)]
        refused = runner.invoke(app, ["eval", "run", *common, *options])
        assert refused.exit_code != 0 and words in refused.output, refused.output
        assert "Traceback" not in refused.output
