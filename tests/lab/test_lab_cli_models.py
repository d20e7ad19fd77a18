"""`labmgr models capabilities`, and which endpoint serves which models in `labmgr info` and
`labmgr keys`."""

from __future__ import annotations

import json

import pytest
from fixtures.lab import LabEnv
from typer.testing import CliRunner

from labmgr.cli import app

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("clean_lab_env")

CONFIG = """
[endpoints.other]
base_url = "http://127.0.0.1:9/v1"
key_env = "OTHER_KEY"
models = ["gpt-4o*", "meta-llama/*"]

[models."my-vllm-*"]
logprobs = false
n = false
"""


def _lab(clean_lab_env: LabEnv) -> None:
    assert runner.invoke(app, ["init"]).exit_code == 0
    with (clean_lab_env.work / ".labmgr" / "config.toml").open("a") as config:
        config.write(CONFIG)


def test_capabilities_of_a_reasoning_fine_tune_say_where_they_came_from(
    clean_lab_env: LabEnv,
) -> None:
    _lab(clean_lab_env)
    result = runner.invoke(app, ["models", "capabilities", "ft:o4-mini-2025-04-16:org:x:1"])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(None, 1) for line in result.output.splitlines())
    assert lines["temperature"] == "1 only" and lines["logprobs"] == "no"
    assert lines["token_limit"] == "max_completion_tokens"
    assert lines["reasoning_effort"] == "low, medium, high (API default: medium)"
    assert lines["source"] == "built-in table (o4-mini, as of 2025-08)"


def test_capabilities_show_the_labs_overrides(clean_lab_env: LabEnv) -> None:
    _lab(clean_lab_env)
    result = runner.invoke(app, ["models", "capabilities", "my-vllm-7b", "--json"])
    data = json.loads(result.output)
    assert data["logprobs"] is False and data["n"] is False and data["temperature"] is True
    assert data["source"].startswith('config [models."my-vllm-*"]')
    table = runner.invoke(app, ["models", "capabilities", "--json"])
    rows = {row["model"]: row for row in json.loads(table.output)}
    assert rows["gpt-5-mini"]["reasoning_efforts"] == ["minimal", "low", "medium", "high"]
    assert rows["my-vllm-*"]["logprobs"] is False


def test_an_override_default_effort_a_model_does_not_accept_is_one_sentence(
    clean_lab_env: LabEnv,
) -> None:
    assert runner.invoke(app, ["init"]).exit_code == 0
    with (clean_lab_env.work / ".labmgr" / "config.toml").open("a") as config:
        config.write('[models."o4-*"]\ndefault_reasoning_effort = "minimal"\n')
    result = runner.invoke(app, ["models", "capabilities", "o4-mini"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[0] == (
        "Error: [models.\"o4-*\"] in the lab's config: default_reasoning_effort 'minimal' "
        "is not one of o4-mini's reasoning_efforts (low, medium, high)"
    )


def test_info_and_keys_say_which_endpoint_serves_which_models(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lab(clean_lab_env)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha-01234")
    monkeypatch.setenv("OTHER_KEY", "sk-test-other-01234")
    info = json.loads(runner.invoke(app, ["info", "--json"]).output)
    other = next(e for e in info["endpoints"] if e["name"] == "other")
    assert other["models"] == ["gpt-4o*", "meta-llama/*"]
    assert [rule["models"] for rule in info["routing"]] == [
        "gpt-4o*, meta-llama/*",
        "fine-tunes in the jobs database",
        "other fine-tunes",
        "everything else",
    ]
    assert info["routing"][0]["served_by"] == "endpoint other (OTHER_KEY)"
    assert info["routing"][-1]["served_by"] == "endpoint openai (OPENAI_API_KEY)"
    text = runner.invoke(app, ["info"]).output
    assert "1. gpt-4o*, meta-llama/* → endpoint other (OTHER_KEY)" in text
    keys = runner.invoke(app, ["keys", "--no-resolve"])
    assert keys.exit_code == 0, keys.output
    assert "1. gpt-4o*, meta-llama/* → endpoint other (OTHER_KEY)" in keys.output
    assert "sk-test" not in keys.output + text
    rows = json.loads(runner.invoke(app, ["keys", "--no-resolve", "--json"]).output)
    assert {row["key_env"]: row["models"] for row in rows} == {
        "OPENAI_API_KEY": [],
        "OTHER_KEY": ["gpt-4o*", "meta-llama/*"],
    }
