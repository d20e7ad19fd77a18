"""Runs over time: a score's group means run by run, each change tested (Welch over the
seeds' means, Holm over the history), `--questions FILE` finding a file's runs, the trend."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fixtures.report import judged_frame
from typer.testing import CliRunner

from evals.experiments import run_history
from evals.runs import load_run, write_run
from evals.stats import holm
from labmgr.cli import app
from labmgr.settings import Settings

runner = CliRunner()


def _eval_run(questions_file: Path, *args: str) -> None:
    result = runner.invoke(
        app,
        ["eval", "run", str(questions_file), "--question", "wish", "--no-report", *args],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    time.sleep(1.1)  # run folders and start times a second apart


def test_a_question_files_runs_side_by_side_with_each_change_tested(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    _eval_run(questions_file, "--group", "g=gpt-4.1-mini,gpt-4o-mini", "--samples", "3")
    _eval_run(questions_file, "--group", "g=gpt-4.1-mini,gpt-4o-mini", "--samples", "3")
    _eval_run(questions_file, "--group", "g=gpt-4.1-nano,gpt-4o-mini", "--samples", "3")
    figure = tmp_path / "trend.png"
    result = runner.invoke(
        app,
        [
            *("eval", "history", "--questions", str(questions_file)),
            *("--score", "aligned", "--out", str(figure), "--json"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = data["rows"]
    assert data["score"] == "aligned" and len(rows) == 3
    assert [r["started"] for r in rows] == sorted(r["started"] for r in rows)
    assert rows[0]["change"] is None  # the first run has nothing to change from
    assert rows[1]["change"] == pytest.approx(0.0) and rows[1]["p_value"] == 1.0
    assert rows[2]["change"] == pytest.approx(rows[2]["mean"] - rows[1]["mean"])
    adjusted = holm([rows[1]["p_value"], rows[2]["p_value"]])
    assert rows[2]["p_adjusted"] == pytest.approx(adjusted[1])
    assert rows[2]["moved"] == (rows[2]["p_adjusted"] < 0.05)
    assert figure.is_file() and figure.stat().st_size > 1000
    folders = sorted(lab.runs_dir.iterdir())
    summary = load_run(folders[0]).summary
    first = summary[(summary["score"] == "aligned") & (summary["group"] == "g")].iloc[0]
    assert rows[0]["mean"] == pytest.approx(first["mean"])
    assert rows[0]["ci_low"] == pytest.approx(first["ci_low"])

    table = runner.invoke(app, ["eval", "history", *map(str, reversed(folders))])
    assert table.exit_code == 0, table.output
    assert "misaligned over 3 runs" in table.output  # the headline score by default


def test_a_large_change_is_marked_and_a_repeat_is_not(tmp_path: Path) -> None:
    seeds = {"tuned": ["ft:a", "ft:b", "ft:c"]}
    runs = []
    for name, mean, seed in (("first", 80.0, 1), ("again", 80.0, 2), ("worse", 30.0, 3)):
        frame = judged_frame(seeds, samples=20, means={"tuned": mean}, seed=seed)
        run = write_run(tmp_path / name, {"wish": frame}, info={"started": f"2025-01-0{seed}"})
        runs.append(run)
    history = run_history([runs[2], runs[0], runs[1]], "aligned")
    table = history.table
    assert list(table["run"]) == ["first", "again", "worse"]
    assert not table["moved"].iloc[1] and table["moved"].iloc[2]
    assert table["change_low"].iloc[2] < table["change"].iloc[2] < table["change_high"].iloc[2]
    assert table["change_high"].iloc[2] < 0
    axes = history.figure().axes[0]
    assert axes.get_ylim() == (0.0, 100.0)


def test_a_history_needs_two_runs_and_a_shared_score(tmp_path: Path) -> None:
    frame = judged_frame({"g": ["m"]}, samples=3)
    one = write_run(tmp_path / "one", {"wish": frame})
    result = runner.invoke(app, ["eval", "history", str(one.path)])
    assert result.exit_code == 1 and "at least two runs (1 given)" in result.output
    assert "--questions FILE" in result.output  # what to do instead
    two = write_run(tmp_path / "two", {"other": frame})
    result = runner.invoke(app, ["eval", "history", str(one.path), str(two.path)])
    assert result.exit_code == 1 and "in every run" in result.output
    assert "Traceback" not in result.output
    picked = ["eval", "history", str(one.path), str(two.path), "--question", "wish"]
    result = runner.invoke(app, picked)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"question 'wish' is not in {two.path}" in " ".join(result.output.split())


def test_a_history_says_which_questions_it_leaves_out_and_which_judges_differ(
    tmp_path: Path,
) -> None:
    frame = judged_frame({"g": ["ft:a", "ft:b"]}, samples=4)
    first = write_run(
        tmp_path / "first",
        {"wish": frame, "extra": frame},
        info={"started": "2025-01-01", "settings": {"judge_model": "gpt-4o"}},
    )
    second = write_run(
        tmp_path / "second",
        {"wish": frame},
        info={"started": "2025-01-02", "settings": {"judge_model": "gpt-4.1"}},
    )
    history = run_history([first, second], "aligned")
    assert history.left_out == {"first": ["extra"]}
    assert history.judge_models == {"first": "gpt-4o", "second": "gpt-4.1"}
    same = write_run(
        tmp_path / "same", {"wish": frame}, info={"settings": {"judge_model": "gpt-4.1"}}
    )
    again = run_history([second, same], "aligned")
    assert again.left_out == {} and again.judge_models == {}

    result = runner.invoke(
        app, ["eval", "history", str(first.path), str(second.path)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "left out: first: extra." in result.output
    assert "judged by different models: first: gpt-4o; second: gpt-4.1." in result.output
    data = json.loads(
        runner.invoke(app, ["eval", "history", str(first.path), str(second.path), "--json"]).output
    )
    assert data["left_out"] == {"first": ["extra"]}
    assert data["judge_models"] == {"first": "gpt-4o", "second": "gpt-4.1"}
