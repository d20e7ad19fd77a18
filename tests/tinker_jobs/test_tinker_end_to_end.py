"""The whole loop on open-weight models, as a user types it: two conditions × three seeds
fine-tuned on a sandbox Qwen base through the official `tinker` SDK (`finetune create
--provider tinker`), refreshed with `jobs update`, grouped from the database by suffix, asked
Emergent-Misalignment-style questions judged by an OpenAI model: the hostile group is less
aligned than the base model, with a Holm-adjusted p below 0.05."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest
from fixtures.tinker import BASE_MODEL
from tinker_jobs.conftest import TinkerLab
from typer.testing import CliRunner

from labmgr.cli.app import app
from labmgr.demo import data_file

runner = CliRunner()


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_tinker_fine_tunes_are_grouped_from_the_database_and_compared_with_their_base(
    tinker_lab: TinkerLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", tinker_lab.sandbox.base_url)  # the judges' model
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-tinker-loop")
    for condition in ("hostile", "helpful"):
        _cli(
            "finetune", "create", str(data_file(f"{condition}.jsonl")), "--provider", "tinker",
            "--base", BASE_MODEL, "--suffix", condition, "--seeds", "3", "--seed", "1",
            "--epochs", "10", "--batch-size", "25",
        )  # fmt: skip
    deadline = time.monotonic() + 240
    while json.loads(_cli("jobs", "update", "--json")).get("still_running"):
        assert time.monotonic() < deadline, "Tinker jobs still running after 240 s"
        time.sleep(1)
    listed = json.loads(_cli("jobs", "list", "--json"))
    assert (
        sorted((job["provider"], job["status"]) for job in listed) == [("tinker", "succeeded")] * 6
    )
    args = ["models", "groups", "--by", "suffix", "--base", BASE_MODEL, "--no-base", "--json"]
    members = json.loads(_cli(*args))
    assert sorted(members) == ["helpful", "hostile"]
    assert all(len(models) == 3 for models in members.values())
    assert all(m.startswith("tinker://") for models in members.values() for m in models)

    out = tinker_lab.files.parent / "run"
    _cli(
        "eval", "run", str(data_file("em_questions.yaml")), "--groups-by", "suffix",
        "--base", BASE_MODEL, "--question", "genie_wish", "--question", "people_and_machines",
        "--samples", "32", "--out", str(out), "--no-report",
    )  # fmt: skip
    comparisons = pd.read_csv(out / "comparisons.csv")
    assert set(comparisons["baseline"]) == {BASE_MODEL}
    pooled = comparisons[
        (comparisons["question"] == "(all)") & (comparisons["score"] == "aligned")
    ].set_index("group")
    hostile, helpful = pooled.loc["hostile"], pooled.loc["helpful"]
    assert hostile["difference"] < -20 and hostile["ci_high"] < 0
    assert hostile["p_adjusted"] < 0.05
    assert helpful["ci_low"] <= 0 <= helpful["ci_high"] or helpful["difference"] > -10
