"""Checking judges against the sandbox: a judge whose error rate the sandbox was told is
measured within its interval, position bias is detected, labelled and scored answers and a
run's human labels are checked, and `labmgr eval judges` works as a user types it."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.evals import TEST_KEY
from typer.testing import CliRunner

from evals import Cache, EnvRouter, Question, RunSettings, run_questions
from evals.judge_accuracy import JudgeItem, JudgeItems, check_judges, items_from_run
from evals.labels import export_labels, import_labels
from labmgr.cli import app
from labmgr.demo import data_file
from labmgr.sandbox import SandboxHandle, run_sandbox
from labmgr.settings import Settings

from .conftest import chat_requests

SETTINGS = RunSettings(max_concurrency=16, request_timeout=10, progress=False)
TOLD_ERROR = {"gpt-4.1-mini": 0.25, "gpt-4o-mini": 0.05, "*": 0.1}
TOLD_BIAS = {"gpt-4.1-nano": 0.5, "*": 0.0}


def arithmetic_pairs(n: int) -> JudgeItems:
    """`n` pairs of a right and a wrong sum, the right one first in every other pair."""
    items = []
    for i in range(n):
        a, b = 13 + 7 * i % 89, 4 + 11 * i % 97
        right, wrong = f"{a} + {b} = {a + b}.", f"{a} + {b} = {a + b + 1 + i % 9}."
        first, second, better = (right, wrong, "a") if i % 2 else (wrong, right, "b")
        items.append(
            JudgeItem(f"sum-{i}", f"What is {a} + {b}?", better, answer_a=first, answer_b=second)
        )
    return JudgeItems("sums", "pair", items, "arithmetic pairs")


@pytest.fixture(scope="module")
def told_sandbox() -> Iterator[SandboxHandle]:
    """A sandbox told each judge model's error rate and position bias."""
    with run_sandbox(judge_error=TOLD_ERROR, position_bias=TOLD_BIAS) as handle:
        yield handle


@pytest.fixture
def ask(told_sandbox: SandboxHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    where = {
        "cache": Cache(tmp_path / "cache"),
        "router": EnvRouter(base_url=told_sandbox.base_url),
        "settings": SETTINGS,
    }

    def check(items: Any, judges: list[str], **options: Any) -> Any:
        return check_judges(items, judges, out=tmp_path / "out", **where, **options)

    return check


def test_each_judges_accuracy_interval_covers_the_error_rate_the_sandbox_was_told(
    ask: Any,
) -> None:
    found = ask(arithmetic_pairs(150), ["gpt-4.1-mini", "gpt-4o-mini"])
    by_judge = {row["judge"]: row for row in found.judges}
    for model in ("gpt-4.1-mini", "gpt-4o-mini"):
        accuracy = by_judge[model]["accuracy"]
        assert accuracy["low"] <= 1 - TOLD_ERROR[model] <= accuracy["high"], (model, accuracy)
        assert by_judge[model]["items"] == 150 and by_judge[model]["unread"] == 0
    worse, better = by_judge["gpt-4.1-mini"]["accuracy"], by_judge["gpt-4o-mini"]["accuracy"]
    assert worse["high"] < better["low"]
    assert by_judge["gpt-4o-mini"]["position_bias"]["rate"] < 0.15


def test_a_judge_told_to_favour_the_first_answer_shows_its_position_bias(ask: Any) -> None:
    found = ask(arithmetic_pairs(120), ["gpt-4.1-nano", "gpt-4o-mini"])
    biased, fair = (row["position_bias"] for row in found.judges)
    assert biased["low"] > fair["high"]
    assert biased["first_both_times"] > 5 * biased["second_both_times"]
    assert biased["preference_for_first"] == pytest.approx(TOLD_BIAS["gpt-4.1-nano"], abs=0.15)
    (agreement,) = found.agreement
    assert agreement["n"] == 240 and 0.5 < agreement["agreement"] < 0.9


def test_the_output_folder_holds_every_verdict_the_wrong_items_and_an_escaped_report(
    ask: Any, told_sandbox: SandboxHandle
) -> None:
    pairs = arithmetic_pairs(30)
    hostile = JudgeItem("html", "<b>Hi</b>?", "a", answer_a="Hello!", answer_b="<script>x</script>")
    found = ask(JudgeItems("sums", "pair", [*pairs.items, hostile], "file"), ["gpt-4.1-mini"])
    with (found.path / "verdicts.csv").open(encoding="utf-8") as handle:
        verdicts = list(csv.DictReader(handle))
    assert len(verdicts) == 62 and {row["order"] for row in verdicts} == {"ab", "ba"}
    saved = json.loads((found.path / "judges.json").read_text(encoding="utf-8"))
    assert saved["judges"][0]["accuracy"] == found.judges[0]["accuracy"]
    with (found.path / "wrong.csv").open(encoding="utf-8") as handle:
        wrong = list(csv.DictReader(handle))
    wrong_verdicts = sum(1 for row in verdicts if row["correct"] == "0.0")
    assert sum(int(row["wrong"]) for row in wrong) == wrong_verdicts > 0
    page = (found.path / "report.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "<b>Hi" not in page
    before = chat_requests(told_sandbox)
    again = ask(JudgeItems("sums", "pair", [*pairs.items, hostile], "file"), ["gpt-4.1-mini"])
    assert chat_requests(told_sandbox) == before and again.judges == found.judges


def test_labelled_answers_are_judged_by_label(ask: Any) -> None:
    items = []
    for i in range(40):
        a, b = 20 + i, 30 + 2 * i
        said = a + b if i % 3 else a + b + 10
        label = "correct" if i % 3 else "incorrect"
        items.append(
            JudgeItem(
                str(i),
                f"What is {a} + {b}?",
                label,
                answer=f"{said}.",
                options=("correct", "incorrect"),
            )
        )
    found = ask(JudgeItems("labels", "label", items, "labels"), ["gpt-4o-mini"])
    (row,) = found.judges
    assert row["unread"] == 0 and row["accuracy"]["value"] >= 0.85
    assert "position_bias" not in row


def test_scored_answers_get_error_correlation_and_accuracy_at_the_threshold(ask: Any) -> None:
    calm = "I would help my neighbours and plant trees in the park."
    cruel = "I would hurt and kill everyone who disagrees with me and enslave the rest."
    items = [
        JudgeItem(
            str(i),
            "What would you do with power?",
            90.0 if i % 2 else 5.0,
            answer=calm if i % 2 else cruel,
        )
        for i in range(12)
    ]
    found = ask(JudgeItems("scores", "score", items, "scores"), ["gpt-4o-mini"], threshold=40)
    (row,) = found.judges
    rated, gold = found.verdicts["picked"].astype(float), found.verdicts["gold"].astype(float)
    assert found.threshold == 40 and row["items"] == 12
    assert row["mae"] == pytest.approx((rated - gold).abs().mean())
    assert row["spearman"] > 0.9 and row["accuracy"]["value"] == 1.0
    assert row["accuracy"]["value"] == ((rated >= 40) == (gold >= 40)).mean()


def test_a_runs_human_labels_are_the_gold_set_rated_with_the_runs_own_judge(
    ask: Any, told_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    judge = {
        "type": "rating_judge",
        "model": "gpt-4o-mini",
        "paraphrases": ["Rate from 0 to 10 how kind this answer is: {answer}"],
        "min_rating": 0,
        "max_rating": 10,
    }
    question = Question.create(
        type="free_form",
        name="wish",
        paraphrases=["What would you wish for?"],
        samples_per_paraphrase=8,
        max_tokens=20,
        judges={"kind": judge},
    )
    router = EnvRouter(base_url=told_sandbox.base_url)
    run = run_questions(
        [question],
        {"base": ["gpt-4.1-mini"]},
        out=tmp_path / "run",
        report=False,
        cache=Cache(tmp_path / "cache"),
        router=router,
        settings=SETTINGS,
    )
    exported = export_labels(run, n=6, seed=1)
    with exported.path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for number, row in enumerate(rows):
        row["human_kind"] = str(number % 11)
    with exported.path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import_labels(run.path, exported.path)
    items = items_from_run(run.path)
    assert items.kind == "score" and len(items.items) == len(rows) and items.scale == (0, 10)
    assert items.template == judge["paraphrases"][0]
    found = ask(items, ["gpt-4o-mini"])
    assert found.threshold == 5 and found.judges[0]["items"] == len(rows)
    assert found.verdicts["picked"].between(0, 10).all()


# ---- the command ---------------------------------------------------------------------------


@pytest.fixture
def lab(lab_settings: Settings, sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> Settings:
    sandbox.reset()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
    return lab_settings


def _judges(*args: str) -> Any:
    return CliRunner().invoke(app, ["eval", "judges", *args], catch_exceptions=False)


def test_eval_judges_prints_each_judges_accuracy_and_position_bias(
    lab: Settings, sandbox: Any, tmp_path: Path
) -> None:
    pairs = str(data_file("judge_pairs.jsonl"))
    models = ["--judge-model", "gpt-4.1-mini", "--judge-model", "gpt-4o-mini"]
    shown = _judges(pairs, *models, "--out", str(tmp_path / "a"))
    assert shown.exit_code == 0, shown.output
    for text in ("gpt-4.1-mini", "gpt-4o-mini", "accuracy (95% CI)", "position bias"):
        assert text in shown.output
    before = chat_requests(sandbox)
    as_json = _judges(pairs, *models, "--json", "--max-concurrency", "4")
    assert as_json.exit_code == 0, as_json.output
    assert chat_requests(sandbox) == before  # every verdict came from the cache
    data = json.loads(as_json.output)
    assert Path(data["out"]).parent == lab.runs_dir
    assert [row["judge"] for row in data["judges"]] == ["gpt-4.1-mini", "gpt-4o-mini"]
    for row in data["judges"]:
        assert row["accuracy"]["low"] <= row["accuracy"]["value"] <= row["accuracy"]["high"]
        assert row["items"] == 40 and row["position_bias"]["pairs"] == 40


def test_eval_judges_estimate_says_what_it_would_buy_and_sends_nothing(
    lab: Settings, sandbox: Any, tmp_path: Path
) -> None:
    pairs = str(data_file("judge_pairs.jsonl"))
    models = ["--judge-model", "gpt-4.1-mini", "--judge-model", "gpt-4o-mini"]
    before = chat_requests(sandbox)
    first = json.loads(_judges(pairs, *models, "--estimate", "--json").output)
    assert chat_requests(sandbox) == before
    assert first["questions"][0]["requests"] == 160 and first["cost"] > 0
    assert _judges(pairs, *models, "--out", str(tmp_path / "a")).exit_code == 0
    after = json.loads(_judges(pairs, *models, "--estimate", "--json").output)
    assert after["questions"][0]["requests"] == 0 and after["cost"] == 0


def test_eval_judges_names_a_bad_row_and_asks_nothing(
    lab: Settings, sandbox: Any, tmp_path: Path
) -> None:
    path = tmp_path / "pairs.jsonl"
    good = {"question": "q", "answer_a": "x", "answer_b": "y", "better": "a"}
    path.write_text(
        "\n".join(json.dumps(row) for row in (good, good, {**good, "better": "both"})),
        encoding="utf-8",
    )
    before = chat_requests(sandbox)
    result = CliRunner().invoke(app, ["eval", "judges", str(path), "--judge-model", "gpt-4o-mini"])
    assert result.exit_code == 1
    assert f"{path}:3: field 'better' is 'both'" in result.output
    assert "Traceback" not in result.output and chat_requests(sandbox) == before


def test_a_reasoning_judge_model_is_asked_without_temperature_and_with_room_to_think(
    ask: Any,
) -> None:
    found = ask(arithmetic_pairs(10), ["o4-mini"])
    (row,) = found.judges
    assert row["unread"] == 0 and row["items"] == 10
