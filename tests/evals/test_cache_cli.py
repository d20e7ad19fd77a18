"""`labmgr cache info`, `labmgr cache clear` and `labmgr cache copy`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from evals import Cache
from evals.cache import ChatRequest, SampleResult
from labmgr.cli import app


def _fill(cache: Cache) -> None:
    for model, question in (("m1", "q1"), ("m2", "q1"), ("m1", "q2")):
        request = ChatRequest(
            endpoint="http://x/v1",
            model=model,
            messages=[{"role": "user", "content": question}],
            params={},
        )
        cache.store(request, question, [(0, SampleResult("a", None, "stop", 3, 1))])


def test_info_lists_questions_and_models_as_json(tmp_path: Path) -> None:
    _fill(Cache(tmp_path))
    result = CliRunner().invoke(app, ["cache", "info", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["samples"] == 3 and "packs" not in info
    assert [(e["question"], e["model"]) for e in info["entries"]] == [
        ("q1", "m1"),
        ("q1", "m2"),
        ("q2", "m1"),
    ]


def test_clear_by_question_and_model(tmp_path: Path) -> None:
    _fill(Cache(tmp_path))
    runner = CliRunner()
    result = runner.invoke(
        app, ["cache", "clear", "--dir", str(tmp_path), "--question", "q1", "--model", "m2"]
    )
    assert result.exit_code == 0 and "deleted 1 cached samples" in result.output
    assert Cache(tmp_path).info().samples == 2
    refused = runner.invoke(app, ["cache", "clear", "--dir", str(tmp_path)], input="n\n")
    assert refused.exit_code != 0 and Cache(tmp_path).info().samples == 2
    result = runner.invoke(app, ["cache", "clear", "--dir", str(tmp_path), "--yes"])
    assert result.exit_code == 0 and Cache(tmp_path).info().samples == 0


def test_cache_info_runs_as_a_command(tmp_path: Path) -> None:
    _fill(Cache(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "labmgr", "cache", "info", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "3 cached samples" in done.stdout and "q2" in done.stdout


def test_clear_has_no_packs_option(tmp_path: Path) -> None:
    _fill(Cache(tmp_path))
    result = CliRunner().invoke(app, ["cache", "clear", "--packs", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "No such option" in result.output
    assert Cache(tmp_path).info().samples == 3


def test_copy_fills_another_cache_and_a_second_copy_skips_what_is_there(tmp_path: Path) -> None:
    source, target = tmp_path / "here", tmp_path / "shared"
    _fill(Cache(source))
    runner = CliRunner()
    args = ["cache", "copy", "--dir", str(source), "--to", str(target)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "copied 3 samples and 0 errors" in first.output and "skipped" not in first.output
    copied = [(e.question, e.model, e.samples) for e in Cache(target).info().entries]
    assert copied == [(e.question, e.model, e.samples) for e in Cache(source).info().entries]
    again = runner.invoke(app, [*args, "--json"])
    assert again.exit_code == 0, again.output
    counts = json.loads(again.output)
    assert counts["read"]["samples"] == 3 and counts["copied"]["samples"] == 0
    assert Cache(source).info().samples == 3 and Cache(target).info().samples == 3
    third = runner.invoke(app, args)
    assert "copied 0 samples" in third.output and "3 rows were there already" in third.output


def test_clearing_a_question_deletes_its_verdicts_and_nothing_of_a_question_it_prefixes(
    tmp_path: Path,
) -> None:
    cache = Cache(tmp_path)
    for label in ("wish", "wish/judges", "wish_json", "wish_json/judges", "judges/wish"):
        request = ChatRequest(
            endpoint="http://x/v1",
            model="m1",
            messages=[{"role": "user", "content": label}],
            params={},
        )
        cache.store(request, label, [(0, SampleResult("a", None, "stop", 3, 1))])
    result = CliRunner().invoke(
        app, ["cache", "clear", "--dir", str(tmp_path), "--question", "wish"]
    )
    assert result.exit_code == 0 and "deleted 2 cached samples of question 'wish'" in result.output
    left = sorted(e.question for e in Cache(tmp_path).info().entries)
    assert left == ["judges/wish", "wish_json", "wish_json/judges"]
