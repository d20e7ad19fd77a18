"""`labmgr eval run` with reasoning and chat models: refusals before spending, `--adapt`,
`--reasoning-effort`, and answers cut by the token budget, as a user types them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evals.runs import load_run
from labmgr.cli import app
from labmgr.settings import Settings

runner = CliRunner()

QUESTIONS = """\
- name: colour
  type: free_form
  paraphrases: ["Name a colour."]
  samples_per_paraphrase: 2
  temperature: 0
  max_tokens: 1024
"""


def _requests(sandbox: Any) -> int:
    return sum(int(count) for count in sandbox.stats()["requests"].values())


def _run(questions: Path, *args: str) -> Any:
    groups = ["--group", "reasoning=gpt-5-mini,o4-mini", "--group", "chat=gpt-4.1-mini"]
    return runner.invoke(app, ["eval", "run", str(questions), *groups, "--no-report", *args])


def test_a_temperature_reasoning_models_refuse_ends_the_run_before_any_request(
    lab: Settings, sandbox: Any, tmp_path: Path
) -> None:
    questions = tmp_path / "q.yaml"
    questions.write_text(QUESTIONS)
    result = _run(questions, "--out", str(tmp_path / "run"))
    assert result.exit_code == 1
    assert (
        "Error: free_form question 'colour': gpt-5-mini does not accept temperature 0 "
        "(reasoning models sample at 1 only): set `adapt: true` to drop it, or ask a chat "
        "model (also: o4-mini)." in result.output
    )
    assert "--adapt" in result.output and "Traceback" not in result.output
    assert _requests(sandbox) == 0
    estimate = _run(questions, "--estimate")
    assert estimate.exit_code == 1 and "does not accept temperature 0" in estimate.output
    assert _requests(sandbox) == 0


def test_adapt_and_reasoning_effort_shape_what_reasoning_models_are_sent(
    lab: Settings, sandbox: Any, tmp_path: Path
) -> None:
    questions = tmp_path / "q.yaml"
    questions.write_text(QUESTIONS)
    out = tmp_path / "run"
    result = _run(questions, "--adapt", "--reasoning-effort", "low", "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    run = load_run(out)
    assert run.info["settings"]["adapt"] is True
    assert run.info["settings"]["reasoning_effort"] == "low"
    frame = run.frames()["colour"]
    sent = {m: json.loads(a) for m, a in zip(frame["model"], frame["api_kwargs"], strict=True)}
    assert sent["gpt-5-mini"] == {
        "model": "gpt-5-mini",
        "max_completion_tokens": 1024,
        "reasoning_effort": "low",
    }
    assert sent["gpt-4.1-mini"] == {"model": "gpt-4.1-mini", "max_tokens": 1024, "temperature": 0}
    bad = _run(questions, "--adapt", "--reasoning-effort", "hgh")
    assert bad.exit_code == 1 and "option 'reasoning_effort' is 'hgh'" in bad.output


def test_answers_cut_by_the_budget_are_counted_apart_and_logged_with_the_fix(
    lab: Settings, tmp_path: Path
) -> None:
    questions = tmp_path / "q.yaml"
    questions.write_text(
        QUESTIONS.replace("temperature: 0", "temperature: 1").replace("1024", "16")
    )
    out = tmp_path / "run"
    args = ["eval", "run", str(questions), "--group", "r=gpt-5-mini,gpt-4.1-mini"]
    result = runner.invoke(app, [*args, "--no-report", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 empty on gpt-5-mini: the token budget ran out" in result.output
    log = (out / "run.log").read_text()
    assert "raise max_tokens to 1024 or more" in log
