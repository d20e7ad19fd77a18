"""`labmgr init/info/keys/finetune validate` via the CLI: output, --json, exit codes, no keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.lab import IdentityServer, LabEnv
from typer.testing import CliRunner

import labmgr
from labmgr.cli import app

KEY_A = "sk-test-alpha-01234"
KEY_B = "sk-test-beta-01234"

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("clean_lab_env")


def _train_file(directory: Path, n: int = 10, bad_line: str | None = None) -> Path:
    lines = [
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": f"q{i}"},
                    {"role": "assistant", "content": f"a{i}"},
                ]
            }
        )
        for i in range(n)
    ]
    if bad_line is not None:
        lines.append(bad_line)
    path = directory / "train.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_init_then_info_json_shows_the_lab_and_how_it_was_found(clean_lab_env: LabEnv) -> None:
    assert runner.invoke(app, ["init"]).exit_code == 0
    result = runner.invoke(app, ["info", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["lab"] == str(clean_lab_env.work / ".labmgr")
    assert data["found_by"].startswith("nearest .labmgr/")
    assert data["db_url"].startswith("sqlite:///")
    assert data["endpoints"][0]["name"] == "openai"


def test_init_twice_reports_existing_and_exits_zero(clean_lab_env: LabEnv) -> None:
    runner.invoke(app, ["init", str(clean_lab_env.root / "p")])
    result = runner.invoke(app, ["init", str(clean_lab_env.root / "p")])
    assert result.exit_code == 0
    assert "created" not in result.stdout and "exists" in result.stdout


def test_home_option_selects_the_lab(clean_lab_env: LabEnv) -> None:
    runner.invoke(app, ["init", str(clean_lab_env.root / "elsewhere")])
    result = runner.invoke(app, ["--home", str(clean_lab_env.root / "elsewhere"), "info", "--json"])
    data = json.loads(result.stdout)
    assert data["lab"] == str(clean_lab_env.root / "elsewhere" / ".labmgr")
    assert data["found_by"] == "--home option"


def test_bad_home_is_one_error_line_and_exit_one(clean_lab_env: LabEnv) -> None:
    result = runner.invoke(app, ["--home", str(clean_lab_env.root / "nope"), "info"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: No lab folder at")
    assert "Traceback" not in result.output


def test_broken_config_is_reported_with_file_and_line(clean_lab_env: LabEnv) -> None:
    runner.invoke(app, ["init"])
    config = clean_lab_env.work / ".labmgr" / "config.toml"
    config.write_text("[eval]\nmax_retries = -1\n")
    result = runner.invoke(app, ["info"])
    assert result.exit_code == 1
    assert f"Error: {config}:2: eval.max_retries" in result.stderr


def test_info_masks_the_database_password(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABMGR_DB_URL", "postgresql+psycopg://me:hunter2@db.example/lab")
    result = runner.invoke(app, ["info", "--json"])
    assert "hunter2" not in result.output
    assert json.loads(result.stdout)["db_url_source"] == "LABMGR_DB_URL"


def test_keys_with_no_key_exits_one_with_the_fix() -> None:
    result = runner.invoke(app, ["keys"])
    assert result.exit_code == 1
    assert "Error: No API keys found" in result.stderr
    assert "OPENAI_API_KEY" in result.stderr


def test_keys_and_info_list_keys_by_name_never_by_value(
    identity_server: IdentityServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity_server.identities[KEY_A] = ("org-one", "proj_a")
    identity_server.identities[KEY_B] = ("org-one", "proj_b")
    monkeypatch.setenv("OPENAI_BASE_URL", identity_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_A)
    monkeypatch.setenv("OPENAI_API_KEY_B", KEY_B)
    runner.invoke(app, ["init"])

    outputs = []
    for args in (
        ["keys", "--no-resolve"],
        ["keys", "--json"],
        ["keys"],
        ["info"],
        ["info", "--json"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    rows = json.loads(runner.invoke(app, ["keys", "--json"]).stdout)
    assert [(r["key_env"], r["organization"], r["project"]) for r in rows] == [
        ("OPENAI_API_KEY", "org-one", "proj_a"),
        ("OPENAI_API_KEY_B", "org-one", "proj_b"),
    ]
    assert "not checked" in outputs[0]
    for text in outputs:
        assert KEY_A not in text and KEY_B not in text
        assert "alpha" not in text and "beta" not in text


def test_keys_reports_a_rejected_key_by_name_and_exits_one(
    identity_server: IdentityServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", identity_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY_WRONG", KEY_A)
    result = runner.invoke(app, ["keys", "--json"])
    assert result.exit_code == 1
    assert "OPENAI_API_KEY_WRONG" in result.stderr
    assert KEY_A not in result.output and "alpha" not in result.output


def test_validate_good_file_exits_zero_and_prints_estimates(clean_lab_env: LabEnv) -> None:
    path = _train_file(clean_lab_env.work)
    result = runner.invoke(app, ["finetune", "validate", str(path), "--model", "gpt-4.1-mini"])
    assert result.exit_code == 0, result.output
    assert "10 examples" in result.stdout and "estimated" in result.stdout
    assert "per epoch on gpt-4.1-mini-2025-04-14" in result.stdout
    assert result.stdout.rstrip().endswith("Valid.")


def test_validate_bad_file_exits_one_with_file_line_errors(clean_lab_env: LabEnv) -> None:
    path = _train_file(clean_lab_env.work, bad_line='{"messages": []}')
    result = runner.invoke(app, ["finetune", "validate", str(path)])
    assert result.exit_code == 1
    assert f"{path}:11: messages is empty" in result.stdout

    as_json = runner.invoke(app, ["finetune", "validate", str(path), "--json"])
    assert as_json.exit_code == 1
    data = json.loads(as_json.stdout)
    assert data["valid"] is False and data["errors"][0]["line"] == 11


def test_validate_missing_file_and_unknown_model_are_one_clear_error(
    clean_lab_env: LabEnv,
) -> None:
    missing = runner.invoke(app, ["finetune", "validate", "nope.jsonl"])
    assert missing.exit_code == 1 and missing.stderr.startswith("Error: Training file nope.jsonl")
    path = _train_file(clean_lab_env.work)
    unknown = runner.invoke(app, ["finetune", "validate", str(path), "--model", "gpt-9"])
    assert unknown.exit_code == 1 and "Error: 'gpt-9' is not a base model" in unknown.stderr


def test_validate_uses_lab_price_overrides(clean_lab_env: LabEnv) -> None:
    runner.invoke(app, ["init"])
    (clean_lab_env.work / ".labmgr" / "config.toml").write_text(
        '[prices."gpt-4.1-mini*"]\ninput = 1\noutput = 1\ntraining = 1000000\n'
    )
    path = _train_file(clean_lab_env.work)
    result = runner.invoke(
        app, ["finetune", "validate", str(path), "--model", "gpt-4.1-mini", "--json"]
    )
    data = json.loads(result.stdout)
    assert data["cost_per_epoch"]["gpt-4.1-mini-2025-04-14"] == pytest.approx(data["n_tokens"])


def test_as_a_subprocess_exit_codes_match(clean_lab_env: LabEnv) -> None:
    # the test runs in a temporary directory: make the source tree importable from there
    source_root = str(Path(labmgr.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([source_root, os.environ.get("PYTHONPATH", "")]),
    }
    good = _train_file(clean_lab_env.work)
    ok = subprocess.run(
        [sys.executable, "-m", "labmgr", "finetune", "validate", str(good)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "labmgr", "--home", str(clean_lab_env.root / "x"), "keys"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("Error: ") and "Traceback" not in bad.stderr
