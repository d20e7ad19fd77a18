"""An endpoint nobody listens on stops a run before anything is bought, with one sentence
naming its URL (not a run of retries and a report of nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evals import Cache, EnvRouter, NoEndpointError, Question, RunSettings
from labmgr.cli import app
from labmgr.settings import Settings


def test_a_run_against_an_endpoint_nobody_listens_on_stops_naming_its_url(
    eval_cache: Cache,
    fast_settings: RunSettings,
    monkeypatch: pytest.MonkeyPatch,
    closed_port: int,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-unreachable")
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    q = Question.create(type="free_form", name="away", paraphrases=["Hi."], max_tokens=5)
    with pytest.raises(NoEndpointError, match=f"nobody listens at {base_url} ") as caught:
        q.df(
            {"g": ["gpt-4o-mini"]},
            cache=eval_cache,
            router=EnvRouter(base_url=base_url),
            settings=fast_settings,
        )
    assert "nothing was bought" in caught.value.message and caught.value.hint


def test_eval_run_against_an_endpoint_nobody_listens_on_says_so_in_one_sentence(
    lab_settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    closed_port: int,
) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-unreachable")
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    questions = tmp_path / "questions.yaml"
    questions.write_text('- name: hi\n  type: free_form\n  paraphrases: ["Hi."]\n')
    result = CliRunner().invoke(app, ["eval", "run", str(questions), "--group", "g=gpt-4o-mini"])
    assert result.exit_code == 1
    assert f"Error: nobody listens at {base_url} (connection refused)" in result.output
    assert "Traceback" not in result.output
