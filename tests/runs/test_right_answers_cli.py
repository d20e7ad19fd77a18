"""Questions with right answers as a user runs them: `labmgr eval run` of a file with a
multiple-choice dataset and a free-form target (accuracy in the printed summary, the
comparison and the report), `eval score` checking the answers again later, and `--batch`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evals.runs import load_run
from labmgr.cli import app
from labmgr.settings import Settings

from .conftest import chat_requests

runner = CliRunner()
GROUPS = ["--group", "base=gpt-4.1-mini", "--group", "seeds=gpt-4o-mini,gpt-4.1-nano"]
ROWS = [
    {
        "id": "add-01",
        "question": "What is 17 + 25?",
        "choices": ["32", "42", "52", "43"],
        "answer": 1,
    },
    {
        "id": "mul-01",
        "question": "What is 6 x 7?",
        "choices": ["42", "36", "48", "13"],
        "answer": 0,
    },
]
QUESTIONS = """\
- id: capability_mc
  type: multiple_choice
  dataset: data/capability_mc.jsonl
  paraphrases: ["{question}"]
  choices: "{choices}"
  target: "{answer}"
  samples_per_paraphrase: 3
  max_tokens: 8
- name: add_short
  type: free_form
  paraphrases: ["What is 17 + 25? Answer with a number."]
  target: "42"
  scorer: numeric
  samples_per_paraphrase: 3
  max_tokens: 10
  judges:
    coherent:
      type: rating_judge
      model: gpt-4o-mini
      paraphrases: ["Rate from 0 to 100 how coherent this is. Reply with a number. {answer}"]
"""


@pytest.fixture
def right_answers_file(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    lines = "".join(json.dumps(row) + "\n" for row in ROWS)
    (tmp_path / "data" / "capability_mc.jsonl").write_text(lines, encoding="utf-8")
    path = tmp_path / "right_answers.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


def _invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _marked_by_letter(frame: Any) -> bool:
    return bool(((frame["answer"] == frame["target"]).astype(float) == frame["correct"]).all())


def test_eval_run_reports_accuracy_and_eval_score_checks_the_answers_again(
    lab: Settings, sandbox: Any, right_answers_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = _invoke(
        "eval", "run", str(right_answers_file), *GROUPS, "--baseline", "base", "--no-judges",
        "--out", str(out),
    )  # fmt: skip
    assert "correct" in result.output
    run = load_run(out)
    mc = run.samples("capability_mc")
    assert _marked_by_letter(mc) and set(mc["item"]) == {"add-01", "mul-01"}
    assert set(run.summary["score"]) == {"correct"}  # the judge was skipped
    assert run.summary["ci_high"].le(1.0).all() and run.summary["ci_low"].ge(0.0).all()
    assert run.comparisons is not None and {"p_value", "p_adjusted"} <= set(run.comparisons)
    assert set(run.comparisons["score"]) == {"correct"}
    definition = run.question_info("capability_mc")["definition"]
    assert definition["dataset"] == ROWS  # the rows are kept in run.json
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Accuracy (the share &#39;correct&#39;) per question and group" in page

    (right_answers_file.parent / "data" / "capability_mc.jsonl").unlink()  # not needed later
    before = chat_requests(sandbox)
    scored = _invoke("eval", "score", str(out), "--json")
    data = json.loads(scored.output)
    assert data["judged"] == {"add_short": ["coherent"]}
    assert chat_requests(sandbox) > before  # the judge, and nothing for the answers
    rescored = load_run(out)
    again = rescored.samples("capability_mc")
    assert _marked_by_letter(again) and again["correct"].tolist() == mc["correct"].tolist()
    short = rescored.samples("add_short")
    assert short["coherent"].notna().any() and short["correct"].notna().all()
    assert {"correct", "coherent"} <= set(rescored.summary["score"])


def test_eval_score_of_a_run_with_only_right_answers_buys_nothing(
    lab: Settings, sandbox: Any, right_answers_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _invoke(
        "eval", "run", str(right_answers_file), "--group", "base=gpt-4.1-mini",
        "--question", "capability_mc", "--no-report", "--out", str(out),
    )  # fmt: skip
    before = chat_requests(sandbox)
    _invoke("eval", "score", str(out))
    assert chat_requests(sandbox) == before
    assert set(load_run(out).summary["score"]) == {"correct"}


def test_a_batch_run_of_a_multiple_choice_question_marks_every_letter(
    lab: Settings, sandbox: Any, right_answers_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "batched"
    result = _invoke(
        "eval", "run", str(right_answers_file), "--group", "base=gpt-4o-mini,gpt-4.1-nano",
        "--question", "capability_mc", "--batch", "--no-report", "--out", str(out), "--json",
    )  # fmt: skip
    assert json.loads(result.output)
    assert chat_requests(sandbox) == 0  # everything went through batches
    frame = load_run(out).samples("capability_mc")
    assert len(frame) == 2 * 2 * 3 and frame["answer"].notna().any()
    assert _marked_by_letter(frame)
