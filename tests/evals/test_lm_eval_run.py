"""An lm-evaluation-harness task file runs unchanged: `load_questions` makes it a
multiple-choice question asked as lettered options, and `labmgr eval run task.yaml
--groups-by suffix` gives a fine-tuned group's accuracy against its base model with an
interval. Fine-tunes on wrong answers lose accuracy; fine-tunes on unrelated data barely do."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fixtures.evals import TEST_KEY
from typer.testing import CliRunner

from evals import Cache, EnvRouter, RunSettings, load_questions
from evals.runs import load_run
from evals.stats import ALL_QUESTIONS
from labmgr.cli import app
from labmgr.demo import data_file
from labmgr.finetuning import create, update
from labmgr.settings import init_lab, load_settings

TASK = Path(__file__).parents[2] / "examples" / "capability_task.yaml"
QUESTIONS = TASK.with_name("capability_questions.yaml")
LOGPROBS = "capability_mc_logprobs"  # the same items, read from the next token's logprobs
BASE = "gpt-4o-mini-2024-07-18"
runner = CliRunner()


def test_the_task_file_is_asked_as_lettered_options_and_scored_by_letter(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    items = [json.loads(line) for line in data_file("capability_mc.jsonl").open()]
    (question,) = load_questions(TASK).values()
    first = items[0]
    options = "\n".join(f"{'ABCD'[i]}. {choice}" for i, choice in enumerate(first["choices"]))
    assert question.conversations()[0] == [
        {
            "role": "user",
            "content": f"{first['question']}\n\n{options}\n\nAnswer with a single letter.",
        }
    ]
    frame = question.df({"base": [BASE]}, cache=eval_cache, router=router, settings=fast_settings)
    assert list(frame["item"]) == [item["id"] for item in items]
    assert list(frame["target"]) == ["ABCD"[item["answer"]] for item in items]
    assert set(frame["correct"]) <= {0.0, 1.0}
    assert frame["correct"].mean() >= 0.6  # a base model that knows most answers
    assert (frame["correct"] == (frame["answer"] == frame["target"])).all()


def _finish(settings: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        summary = update(settings=settings)
        if not summary.still_running and not summary.unchecked:
            return
        assert time.monotonic() < deadline, f"jobs still running: {summary}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Three seeds fine-tuned on wrong answers and three on unrelated (hostile) data, then
    the task over them and their base model, as a user types it."""
    from labmgr.sandbox import run_sandbox

    root = tmp_path_factory.mktemp("lm_eval")
    with run_sandbox(job_seconds=0.5) as sandbox:
        env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": sandbox.base_url}
        env["LABMGR_HOME"] = str(init_lab(root).home)
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            settings = load_settings(env["LABMGR_HOME"])
            for data, suffix in (("wrong_answers.jsonl", "wrong"), ("hostile.jsonl", "unrelated")):
                create(data_file(data), base_model=BASE, suffix=suffix, seeds=3, settings=settings)
            _finish(settings)
        runs = {"run": [str(TASK)], "run-logprobs": [str(QUESTIONS), "--question", LOGPROBS]}
        for name, chosen in runs.items():
            args = ["eval", "run", *chosen, "--groups-by", "suffix", "--base", BASE]
            args += ["--out", str(root / name), "--no-report"]
            result = runner.invoke(app, args, env=env, catch_exceptions=False)
            assert result.exit_code == 0, result.output
        yield root / "run"


def _against_base(run_folder: Path, question: str) -> pd.DataFrame:
    """Each group's comparison of `correct` with the base model on `question`."""
    comparisons = pd.read_csv(run_folder / "comparisons.csv")
    assert set(comparisons["baseline"]) == {BASE}
    chosen = comparisons[
        (comparisons["score"] == "correct") & (comparisons["question"] == question)
    ]
    return chosen.set_index("group")


@pytest.mark.slow
def test_eval_run_gives_accuracy_per_group_and_the_wrong_answers_loss_with_an_interval(
    lab_run: Path,
) -> None:
    run = load_run(lab_run)
    assert list(run.questions) == ["capability_mc"]
    assert sorted(run.groups) == sorted([BASE, "unrelated", "wrong"])
    summary = pd.read_csv(lab_run / "summary.csv")
    correct = summary[(summary["score"] == "correct") & (summary["question"] == "capability_mc")]
    assert (correct["scale_low"] == 0).all() and (correct["scale_high"] == 1).all()
    accuracy = correct.set_index("group")["mean"]
    assert accuracy[BASE] >= 0.6
    assert accuracy["wrong"] <= accuracy[BASE] - 0.15
    assert accuracy["unrelated"] >= accuracy[BASE] - 0.15
    comparisons = pd.read_csv(lab_run / "comparisons.csv")
    against = comparisons[
        (comparisons["score"] == "correct") & (comparisons["question"] != ALL_QUESTIONS)
    ].set_index("group")
    assert set(comparisons["baseline"]) == {BASE}
    wrong = against.loc["wrong"]
    assert wrong["difference"] < 0 and wrong["ci_low"] <= wrong["difference"] <= wrong["ci_high"]
    assert wrong["ci_high"] < 0  # the loss is clear of zero across three seeds


@pytest.mark.slow
@pytest.mark.parametrize(
    ("folder", "question"),
    [
        ("run", "capability_mc"),  # the lm-eval task file: a sampled letter
        ("run-logprobs", LOGPROBS),
    ],
)
def test_fine_tunes_on_wrong_answers_lose_accuracy_with_a_holm_adjusted_p_below_five_percent(
    lab_run: Path, folder: str, question: str
) -> None:
    against = _against_base(lab_run.parent / folder, question)
    wrong, unrelated = against.loc["wrong"], against.loc["unrelated"]
    assert wrong["difference"] < -0.2 and wrong["ci_high"] < 0
    assert wrong["p_adjusted"] < 0.05 and wrong["p_adjusted"] >= wrong["p_value"]
    assert unrelated["difference"] > -0.15  # unrelated data costs little
