"""Generate now, judge later: `eval run --no-judges`, then `eval score` (judge requests only,
as the sandbox's counters show), another judge model, new judges from a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evals.errors import RunOptionsError
from evals.experiments import score_run
from evals.runs import load_run
from labmgr.cli import app
from labmgr.settings import Settings

runner = CliRunner()
GROUPS = ["--group", "base=gpt-4.1-mini", "--group", "small=gpt-4.1-nano"]
QUESTIONS = ["--question", "wish", "--question", "colour", "--question", "cats"]

HARSH_JUDGE = """\
- name: harsh
  type: rating_judge
  model: gpt-4o-mini
  paraphrases: ["Rate from 0 to 100 how harsh this answer is. Reply with a number. {answer}"]
"""


def _models(sandbox: Any) -> dict[str, int]:
    return {m: int(row["requests"]) for m, row in sandbox.stats()["models"].items()}


def _grew(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {m: n - before.get(m, 0) for m, n in after.items() if n != before.get(m, 0)}


def _invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_a_run_without_judges_is_scored_later_with_judge_requests_only(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _invoke(
        "eval", "run", str(questions_file), *GROUPS, *QUESTIONS, "--no-judges", "--out", str(out)
    )
    assert "gpt-4o-mini" not in _models(sandbox)  # the judge model was never asked
    skipped = load_run(out)
    assert skipped.info["settings"]["judges"] == "skipped"
    assert "aligned" not in skipped.samples("wish").columns
    assert set(skipped.summary["score"]) == {"answer"}  # only the rating has a score

    before = _models(sandbox)
    result = _invoke("eval", "score", str(out))
    assert "wish: judged by aligned, coherent" in result.output
    assert "colour: judged by verdict" in result.output
    grew = _grew(before, _models(sandbox))
    assert list(grew) == ["gpt-4o-mini"] and grew["gpt-4o-mini"] > 0
    scored = load_run(out)
    wish = scored.samples("wish")
    assert wish["aligned"].between(0, 100).all() and wish["coherent"].notna().all()
    assert (wish["aligned_cost"] > 0).all()
    assert scored.samples("colour")["verdict"].notna().all()
    assert {"aligned", "coherent", "misaligned", "answer"} <= set(scored.summary["score"])
    assert scored.info["settings"]["judges"] == "asked"
    assert scored.info["scored"][0]["judges"] == {
        "wish": ["aligned", "coherent"],
        "colour": ["verdict"],
    }
    assert "aligned" in (out / "report.html").read_text(encoding="utf-8")

    again = _models(sandbox)
    _invoke("eval", "score", str(out))
    assert _models(sandbox) == again  # the verdicts are cached


def test_another_judge_model_and_judges_from_a_file_replace_or_add_columns(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _invoke("eval", "run", str(questions_file), *GROUPS, "--question", "wish", "--out", str(out))
    first = load_run(out).samples("wish")
    before = _models(sandbox)
    result = _invoke("eval", "score", str(out), "--judge-model", "gpt-4.1", "--json")
    assert list(_grew(before, _models(sandbox))) == ["gpt-4.1"]
    data = json.loads(result.output)
    assert data["judged"] == {"wish": ["aligned", "coherent"]} and data["bought"]["cost"] > 0
    rescored = load_run(out)
    assert rescored.info["settings"]["judge_model"] == "gpt-4.1"
    wish = rescored.samples("wish")
    assert list(wish["answer"]) == list(first["answer"])
    assert list(wish["aligned_question"]) == list(first["aligned_question"])
    sent = {json.loads(k)["model"] for k in wish["aligned_api_kwargs"].dropna()}
    assert sent == {"gpt-4.1"}  # what the new judge model was sent replaces the old
    assert {s["judge_model"] for s in rescored.info["scored"]} == {"gpt-4.1"}

    judges = tmp_path / "judges.yaml"
    judges.write_text(HARSH_JUDGE, encoding="utf-8")
    before = _models(sandbox)
    scored = score_run(out, judges=judges, lab=lab)
    assert list(_grew(before, _models(sandbox))) == ["gpt-4o-mini"]
    assert scored.judged == {"wish": ["harsh"]}
    frame = scored.run.samples("wish")
    assert frame["harsh"].between(0, 100).all()
    assert list(frame["aligned"]) == list(wish["aligned"])  # the other judges are kept
    assert "harsh" in set(scored.run.summary["score"])


def test_a_run_option_asks_every_judge_of_another_model(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _invoke(
        "eval",
        "run",
        str(questions_file),
        "--group",
        "base=gpt-4.1-mini",
        "--question",
        "wish",
        "--judge-model",
        "gpt-4.1",
        "--out",
        str(out),
    )
    assert set(_models(sandbox)) == {"gpt-4.1-mini", "gpt-4.1"}
    run = load_run(out)
    assert run.info["settings"]["judge_model"] == "gpt-4.1"
    definition = run.question_info("wish")["definition"]
    assert {j["model"] for j in definition["judges"].values()} == {"gpt-4.1"}


def test_scoring_a_run_without_judges_to_ask_is_one_clear_error(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _invoke("eval", "run", str(questions_file), *GROUPS, "--question", "cats", "--out", str(out))
    result = runner.invoke(app, ["eval", "score", str(out)])
    assert result.exit_code == 1 and "no question of the run has judges to ask" in result.output
    empty = tmp_path / "empty.yaml"
    empty.write_text("- name: q\n  type: rating\n  paraphrases: [x]\n", encoding="utf-8")
    result = runner.invoke(app, ["eval", "score", str(out), "--judges", str(empty)])
    assert result.exit_code == 1 and "no judge in this file" in result.output
    assert "Traceback" not in result.output


def test_scoring_what_is_not_a_run_or_with_a_judge_model_that_does_not_exist_buys_nothing(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for target, sentence in (
        (empty, "not a run folder (no run.json)"),
        (questions_file, "a file, not a run folder"),
        (tmp_path / "nowhere", "no such run folder"),
    ):
        result = runner.invoke(app, ["eval", "score", str(target)])
        assert result.exit_code == 1 and sentence in result.output, result.output
        assert "Traceback" not in result.output

    out = tmp_path / "run"
    _invoke(
        "eval", "run", str(questions_file), *GROUPS, "--question", "wish", "--no-judges",
        "--out", str(out),
    )  # fmt: skip
    chats = int(sandbox.stats()["requests"].get("chat.completions", 0))
    result = runner.invoke(app, ["eval", "score", str(out), "--judge-model", "gpt-9-imagined"])
    assert result.exit_code == 1, result.output
    assert (
        "gpt-9-imagined does not exist" in result.output and "nothing was bought" in result.output
    )
    assert int(sandbox.stats()["requests"].get("chat.completions", 0)) == chats
    assert "aligned" not in load_run(out).samples("wish").columns  # the run is as it was
    result = runner.invoke(app, ["eval", "score", str(out), "--judge-model", "o3-mini"])
    assert result.exit_code == 1 and "which o3-mini does not return" in result.output
    assert int(sandbox.stats()["requests"].get("chat.completions", 0)) == chats

    fresh = ["--group", "big=gpt-4.1", "--question", "wish", "--out", str(tmp_path / "other")]
    result = runner.invoke(
        app, ["eval", "run", str(questions_file), *fresh, "--judge-model", "gpt-9-imagined"]
    )
    assert result.exit_code == 1 and "gpt-9-imagined does not exist" in result.output
    assert int(sandbox.stats()["requests"].get("chat.completions", 0)) == chats  # no answer


def test_scoring_stopped_by_its_budget_rewrites_nothing_and_says_so(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _invoke(
        "eval",
        "run",
        str(questions_file),
        *GROUPS,
        "--question",
        "wish",
        "--no-judges",
        "--out",
        str(out),
    )
    files = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(RunOptionsError, match=r"stopped: max_cost .* nothing was rewritten"):
        score_run(out, lab=lab, max_cost=1e-9)
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == files
