"""No API key reaches the database, the lab folder, command output or logs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from jobs.conftest import ALPHA_KEY, BETA_KEY, JobsLab, training_file
from typer.testing import CliRunner

from labmgr.cli.app import app

runner = CliRunner()


def _lab_bytes(home: Path) -> bytes:
    return b"".join(path.read_bytes() for path in home.rglob("*") if path.is_file())


def test_keys_never_reach_the_database_files_output_or_logs(
    jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY_BETA", BETA_KEY)
    path = training_file(jobs_lab.files / "secret.jsonl")
    outputs = []
    for args in (
        ["finetune", "create", str(path), "--base", "gpt-4.1-mini", "--seeds", "2", "--json"],
        ["finetune", "create", str(path), "--base", "gpt-4.1-mini", "--key", "OPENAI_API_KEY_BETA"],
        ["jobs", "update", "--watch", "0.2"],
        ["jobs", "import", "--from-api"],
        ["jobs", "list", "--json"],
        ["models", "list", "--checkpoints", "--csv"],
        ["finetune", "create", str(path), "--base", "gpt-9"],
    ):
        result = runner.invoke(app, args)
        outputs.append(result.output)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-wrong-key-000")
    refused = runner.invoke(
        app,
        [
            "finetune",
            "create",
            str(path),
            "--base",
            "gpt-4.1-mini",
            "--key",
            "OPENAI_API_KEY_BETA",
            "--suffix",
            "other",
        ],
    )
    outputs.append(refused.output)
    shown = runner.invoke(app, ["jobs", "list", "--json"])
    jobs = json.loads(shown.stdout)
    assert len(jobs) >= 3 and {job["key_env"] for job in jobs} == {
        "OPENAI_API_KEY",
        "OPENAI_API_KEY_BETA",
    }
    stored = _lab_bytes(jobs_lab.home)
    if jobs_lab.settings.db_url.startswith("sqlite"):
        stored += Path(jobs_lab.settings.db_url.removeprefix("sqlite:///")).read_bytes()
    for key in (ALPHA_KEY, BETA_KEY):
        assert key.encode() not in stored
        assert all(key not in output for output in outputs)
        assert key not in caplog.text
    assert b"OPENAI_API_KEY_BETA" in stored or not jobs_lab.settings.db_url.startswith("sqlite")
