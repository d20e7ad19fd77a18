"""Cost against score: costs.csv per group and model (answers and judges apart) beside the
score with its interval, in `--json`, the report and a figure on the score's scale."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evals.plots import cost_figure
from evals.runs import load_run
from evals.stats import ALL_QUESTIONS, summarize
from labmgr.cli import app
from labmgr.settings import Settings

runner = CliRunner()


def test_costs_per_group_and_model_sit_beside_the_score(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "eval",
            "run",
            str(questions_file),
            "--group",
            "base=gpt-4.1-mini",
            "--group",
            "small=gpt-4o-mini,gpt-4.1-nano",
            "--question",
            "wish",
            "--question",
            "colour",
            "--out",
            str(out),
            "--json",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    run = load_run(out)
    costs = run.costs()
    assert costs is not None and data["costs"] is not None
    assert len(data["costs"]) == len(costs)
    frames = run.frames()
    rows = pd.concat(frames.values(), ignore_index=True, sort=False)
    small = rows[rows["group"] == "small"]
    group_row = costs[
        (costs["level"] == "group") & (costs["group"] == "small") & (costs["score"] == "aligned")
    ].iloc[0]
    assert group_row["n_samples"] == len(small)
    assert group_row["answer_cost_per_sample"] == pytest.approx(small["cost"].mean())
    assert group_row["answer_cost_per_1k"] == pytest.approx(1000 * small["cost"].mean())
    judge_columns = [c for c in small.columns if str(c).endswith("_cost") and c != "cost"]
    assert sorted(judge_columns) == ["aligned_cost", "coherent_cost", "verdict_cost"]
    judged = small[judge_columns].sum(axis=1)
    assert group_row["judge_cost_per_sample"] == pytest.approx(judged.mean())
    assert group_row["judge_cost"] > 0
    # Each verdict is priced once however many rows share it.
    everything = pd.concat(frames.values(), ignore_index=True, sort=False)
    assert everything[judge_columns].sum().sum() > 0
    # The group's score and interval are the summary's (one question: that question's row).
    summary = run.summary
    same = summary[(summary["group"] == "small") & (summary["score"] == "aligned")]
    pooled = same[same["question"] == ALL_QUESTIONS]
    expected = (pooled if not pooled.empty else same).iloc[0]
    assert group_row["mean"] == pytest.approx(expected["mean"])
    assert group_row["ci_low"] == pytest.approx(expected["ci_low"])
    models = costs[(costs["level"] == "model") & (costs["group"] == "small")]
    assert set(models["model"]) == {"gpt-4o-mini", "gpt-4.1-nano"}
    nano = small[small["model"] == "gpt-4.1-nano"]
    nano_row = models[(models["model"] == "gpt-4.1-nano") & (models["score"] == "aligned")]
    assert nano_row["answer_cost_per_sample"].item() == pytest.approx(nano["cost"].mean())
    assert bool(nano_row["sampling_only"].item())
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Cost against score" in page and "cost-table" in page
    assert '<a href="#costs">Cost against score</a>' in page  # reachable from the top

    figure = cost_figure(costs, "aligned")
    ax = figure.axes[0]
    assert ax.get_ylim() == (0.0, 100.0)
    spread = costs["answer_cost_per_1k"].astype(float)
    logarithmic = spread.max() / spread.min() >= 10
    assert ax.get_xscale() == ("log" if logarithmic else "linear")
    assert not math.isnan(float(group_row["mean"]))


def test_the_summary_says_what_a_sample_cost_beside_each_score(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "eval",
            "run",
            str(questions_file),
            "--group",
            "base=gpt-4.1-mini",
            "--group",
            "small=gpt-4o-mini,gpt-4.1-nano",
            "--question",
            "wish",
            "--question",
            "colour",
            "--question",
            "cats",
            "--out",
            str(out),
            "--json",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    run = load_run(out)
    summary = pd.read_csv(out / "summary.csv")
    frames = run.frames()

    def paid(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
        judges = [c for c in frame.columns if str(c).endswith("_cost") and c != "cost"]
        judged = frame[judges].sum(axis=1) if judges else pd.Series(0.0, index=frame.index)
        return frame["cost"], judged

    for row in summary[summary["question"] != ALL_QUESTIONS].to_dict("records"):
        frame = frames[row["question"]]
        answer, judge = paid(frame[frame["group"] == row["group"]])
        assert row["answer_cost_per_sample"] == pytest.approx(answer.mean())
        assert row["answer_cost_per_1k"] == pytest.approx(1000 * answer.mean())
        assert row["judge_cost_per_sample"] == pytest.approx(judge.mean())
        assert row["judge_cost_per_1k"] == pytest.approx(1000 * judge.mean())
    # The rating has no judges: nothing is spent on verdicts; the free-form wish has some.
    cats = summary[summary["question"] == "cats"]
    assert (cats["judge_cost_per_sample"] == 0).all() and (cats["answer_cost_per_sample"] > 0).all()
    assert (summary[summary["question"] == "wish"]["judge_cost_per_sample"] > 0).all()

    # A row over all questions: every sample of the group in the questions with the score.
    wish = frames["wish"]
    dearer = wish.assign(cost=3 * wish["cost"], aligned_cost=3 * wish["aligned_cost"])
    both = summarize({"wish": wish, "again": dearer}, pooled=True)
    pooled = both[(both["question"] == ALL_QUESTIONS) & (both["score"] == "aligned")]
    assert set(pooled["group"]) == {"base", "small"}
    for row in pooled.to_dict("records"):
        mine = wish[wish["group"] == row["group"]]
        answer, judge = paid(mine)
        assert row["answer_cost_per_sample"] == pytest.approx(
            (answer.mean() + 3 * answer.mean()) / 2
        )
        # (a + c) in one question, (3a + c) in the other: a mean of (a + c) + a per sample.
        expected = judge.mean() + mine["aligned_cost"].mean()
        assert row["judge_cost_per_1k"] == pytest.approx(1000 * expected)

    printed = json.loads(result.output)["summary"]
    assert len(printed) == len(summary)
    assert printed[0]["answer_cost_per_1k"] == pytest.approx(summary["answer_cost_per_1k"][0])
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "answers per 1,000" in page and "judges per 1,000" in page
