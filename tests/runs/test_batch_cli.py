"""`labmgr eval run --batch` and `labmgr batches list | collect | cancel` as a user types them."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from evals.stats import SAMPLE_COST_COLUMNS
from labmgr.cli import app
from labmgr.settings import Settings

from .conftest import chat_requests

runner = CliRunner()


def _run(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def _created(sandbox: Any) -> int:
    return int(sandbox.stats()["requests"].get("batches.create", 0))


COMMON = ["--group", "base=gpt-4o-mini,gpt-4.1-nano", "--question", "cats", "--no-report"]


def test_eval_run_with_batch_buys_nothing_synchronously_and_a_plain_rerun_reuses_it(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    batched = _run("eval", "run", str(questions_file), *COMMON, "--batch", "--json")
    assert batched.exit_code == 0, batched.output
    data = json.loads(batched.output)
    assert data["bought"]["cost"] > 0 and data["bought"]["pending"] == 0
    assert chat_requests(sandbox) == 0 and _created(sandbox) == 2  # one batch per model
    again = _run("eval", "run", str(questions_file), *COMMON, "--json")
    assert again.exit_code == 0, again.output
    assert chat_requests(sandbox) == 0

    # The same answers and scores; only the price differs (the rerun counts list price).
    def scores(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k not in SAMPLE_COST_COLUMNS} for row in rows]

    assert scores(json.loads(again.output)["summary"]) == scores(data["summary"])


def test_no_wait_submits_and_returns_then_collect_finishes_and_a_rerun_sends_nothing(
    lab: Settings, sandbox: Any, questions_file: Path
) -> None:
    submitted = _run("eval", "run", str(questions_file), *COMMON, "--batch", "--no-wait")
    assert submitted.exit_code == 0, submitted.output
    assert "samples wait in batches still running" in submitted.output
    assert "from the cache" not in submitted.output  # nothing came from it
    listed = _run("batches", "list", "--json")
    assert listed.exit_code == 0, listed.output
    in_flight = json.loads(listed.output)
    assert len(in_flight) == 2 and {b["question"] for b in in_flight} == {"cats"}
    assert all(b["batch_id"].startswith("batch_") for b in in_flight)
    collected = _run("batches", "collect", "--json")
    assert collected.exit_code == 0, collected.output
    assert json.loads(collected.output)["samples"] == 4
    assert "No batches in flight." in _run("batches", "list").output
    created = _created(sandbox)
    again = _run("eval", "run", str(questions_file), *COMMON, "--batch", "--json")
    assert again.exit_code == 0, again.output
    assert _created(sandbox) == created and chat_requests(sandbox) == 0
    assert json.loads(again.output)["bought"]["cost"] == 0


def test_estimate_with_batch_shows_both_prices(lab: Settings, questions_file: Path) -> None:
    shown = _run("eval", "run", str(questions_file), *COMMON, "--estimate", "--batch", "--json")
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["cost"] > 0 and data["batch_cost"] == pytest.approx(data["cost"] / 2)
    table = _run("eval", "run", str(questions_file), *COMMON, "--estimate", "--batch")
    assert "through the Batch API" in table.output


def test_cancelling_a_batch_nobody_sent_names_it(lab: Settings) -> None:
    result = runner.invoke(app, ["batches", "cancel", "batch_nope"])
    assert result.exit_code == 1
    assert "no batch in flight with id batch_nope" in result.output


def test_no_wait_without_batch_is_refused(lab: Settings, questions_file: Path) -> None:
    result = runner.invoke(app, ["eval", "run", str(questions_file), *COMMON, "--no-wait"])
    assert result.exit_code == 1 and "--no-wait needs --batch" in result.output


def test_a_batch_run_s_cost_per_sample_is_the_batch_price(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    batched, plain = tmp_path / "batched", tmp_path / "plain"
    first = _run("eval", "run", str(questions_file), *COMMON, "--batch", "--out", str(batched))
    assert first.exit_code == 0, first.output
    second = _run("eval", "run", str(questions_file), *COMMON, "--out", str(plain))  # reused
    assert second.exit_code == 0, second.output
    for name in ("costs.csv", "summary.csv"):
        half, full = pd.read_csv(batched / name), pd.read_csv(plain / name)
        assert (full["answer_cost_per_sample"] > 0).all()
        np.testing.assert_allclose(
            half["answer_cost_per_sample"], full["answer_cost_per_sample"] / 2
        )
        np.testing.assert_allclose(half["judge_cost_per_1k"], full["judge_cost_per_1k"] / 2)


def test_a_batch_run_judged_again_without_batches_counts_its_new_verdicts_at_list_price(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    judged = ["--group", "base=gpt-4o-mini,gpt-4.1-nano", "--question", "wish", "--no-report"]
    batched, plain = tmp_path / "batched", tmp_path / "plain"
    first = _run("eval", "run", str(questions_file), *judged, "--batch", "--out", str(batched))
    assert first.exit_code == 0, first.output
    second = _run("eval", "run", str(questions_file), *judged, "--out", str(plain))  # reused
    assert second.exit_code == 0, second.output
    # Both judged again by another model, without batches (the second finds the verdicts the
    # first bought): the answers keep what each run paid, the new verdicts cost list price.
    for folder in (batched, plain):
        scored = _run("eval", "score", str(folder), "--judge-model", "gpt-4.1-mini")
        assert scored.exit_code == 0, scored.output
    half, full = pd.read_csv(batched / "summary.csv"), pd.read_csv(plain / "summary.csv")
    assert (full["judge_cost_per_1k"] > 0).all()
    np.testing.assert_allclose(half["answer_cost_per_sample"], full["answer_cost_per_sample"] / 2)
    np.testing.assert_allclose(half["judge_cost_per_1k"], full["judge_cost_per_1k"])
    settings = json.loads((batched / "run.json").read_text())["settings"]
    assert settings["batch"] is True
    assert settings["judge_batch"] == {"aligned": False, "coherent": False}


EM_FILE = Path(__file__).parents[1] / "evals" / "data" / "em_first_plot_questions.yaml"


def _rounds(created: list[int], gap: float) -> int:
    """Batch creation times (whole seconds) grouped into rounds: a new round starts after a
    pause of at least `gap` seconds."""
    times = sorted(created)
    return 1 + sum(1 for a, b in pairwise(times) if b - a >= gap)


@pytest.mark.slow
def test_a_batch_run_of_the_em_file_sends_its_answers_in_one_round_and_its_judges_in_one_more(
    lab_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fixtures.evals import TEST_KEY
    from openai import OpenAI

    from labmgr.sandbox import run_sandbox

    with run_sandbox(batch_seconds=5.0) as sandbox:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
        result = _run(
            "eval",
            "run",
            str(EM_FILE),
            "--group",
            "base=gpt-4o-mini,gpt-4.1-nano",
            "--samples",
            "1",
            "--batch",
            "--no-report",
            "--out",
            str(tmp_path / "run"),
            "--json",
        )
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["bought"]["pending"] == 0
        client = OpenAI(base_url=sandbox.base_url, api_key=TEST_KEY)
        batches = list(client.batches.list(limit=100))
        client.close()
        assert chat_requests(sandbox) == 0
    # 24 questions: the answers of two models (one batch each), then the judges' verdicts
    # (gpt-4o-mini), each set created together, the second after the first finished (5 s).
    assert len(batches) >= 3
    assert _rounds([b.created_at for b in batches], gap=3) == 2


def test_no_wait_submits_only_the_answers_then_a_rerun_sends_the_judges_as_the_second_round(
    lab: Settings, sandbox: Any, questions_file: Path
) -> None:
    judged = ["--group", "base=gpt-4o-mini", "--question", "colour", "--no-report"]
    submitted = _run("eval", "run", str(questions_file), *judged, "--batch", "--no-wait", "--json")
    assert submitted.exit_code == 0, submitted.output
    first = json.loads(submitted.output)
    assert first["bought"]["pending"] == 4  # the four answers wait; no judge was asked
    assert _created(sandbox) == 1
    collected = _run("batches", "collect", "--json")
    assert collected.exit_code == 0, collected.output
    assert json.loads(collected.output)["samples"] == 4
    again = _run("eval", "run", str(questions_file), *judged, "--batch", "--json")
    assert again.exit_code == 0, again.output
    assert _created(sandbox) == 2  # the judges' verdicts, in one more batch
    data = json.loads(again.output)
    assert data["bought"]["pending"] == 0 and data["totals"]["errors"] == 0
    assert chat_requests(sandbox) == 0
