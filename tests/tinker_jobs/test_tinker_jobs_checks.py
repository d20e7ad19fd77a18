"""What `finetune create --provider tinker` refuses before anything starts, each in one
sentence: a bad training file (file, line, field), options of the other provider, a missing
key, a missing `tinker` extra. And the key never reaches the database, the log or argv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.tinker import BASE_MODEL, TINKER_KEY
from tinker_jobs.conftest import TinkerLab, chat_file, wait_until_final
from typer.testing import CliRunner

from labmgr.cli.app import app
from labmgr.finetuning import lab_jobs

runner = CliRunner()


def _create(*args: str) -> object:
    return runner.invoke(app, ["finetune", "create", *args, "--provider", "tinker"])


def _models_created(lab: TinkerLab) -> int:
    return int(lab.sandbox.stats()["requests"].get("tinker.create_model", 0))


def test_a_bad_line_is_named_before_anything_starts(tinker_lab: TinkerLab) -> None:
    data = chat_file(tinker_lab.files / "bad.jsonl", n=12)
    lines = data.read_text().splitlines()
    broken = json.loads(lines[3])
    broken["messages"][1]["weight"] = 2
    lines[3] = json.dumps(broken)
    data.write_text("\n".join(lines) + "\n")
    before = _models_created(tinker_lab)
    result = _create(str(data), "--base", BASE_MODEL)
    assert result.exit_code == 1
    assert f"{data}:4: messages[1].weight must be 0 or 1, got 2" in result.output
    assert "Traceback" not in result.output
    assert lab_jobs(tinker_lab.settings) == []
    assert _models_created(tinker_lab) == before


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        (["--lr-multiplier", "2"], "--lr-multiplier applies to --provider openai jobs, not tinker"),
        (["--method", "dpo"], "--method applies to --provider openai jobs, not tinker"),
        (["--epochs", "1.5"], "must be a whole number or 'auto'"),
        (["--learning-rate", "-1"], "--learning-rate -1.0: input should be greater than 0"),
        (["--lora-rank", "0"], "--lora-rank 0: input should be greater than or equal to 1"),
    ],
)
def test_options_a_tinker_job_cannot_take_are_refused(
    tinker_lab: TinkerLab, options: list[str], refused: str
) -> None:
    data = chat_file(tinker_lab.files / "pirate.jsonl")
    result = _create(str(data), "--base", BASE_MODEL, *options)
    assert result.exit_code != 0
    assert refused in " ".join(result.output.split())
    assert lab_jobs(tinker_lab.settings) == []


def test_tinker_options_are_refused_for_openai_jobs(tinker_lab: TinkerLab) -> None:
    data = chat_file(tinker_lab.files / "pirate.jsonl")
    result = runner.invoke(
        app, ["finetune", "create", str(data), "--base", "gpt-4.1-mini", "--lora-rank", "8"]
    )
    assert result.exit_code == 1
    assert "--lora-rank applies to --provider tinker jobs, not openai" in result.output


def test_a_missing_key_is_named(tinker_lab: TinkerLab, monkeypatch: pytest.MonkeyPatch) -> None:
    data = chat_file(tinker_lab.files / "pirate.jsonl")
    result = _create(str(data), "--base", BASE_MODEL, "--key", "TEAM")
    assert result.exit_code == 1
    assert "TINKER_API_KEY_TEAM is not set" in result.output
    monkeypatch.setenv("TINKER_API_KEY", "sk-not-tinker")
    result = _create(str(data), "--base", BASE_MODEL)
    assert "TINKER_API_KEY does not hold a Tinker API key" in result.output
    assert "sk-not-tinker" not in result.output
    assert lab_jobs(tinker_lab.settings) == []


def test_without_the_extra_the_error_names_it(tinker_lab: TinkerLab) -> None:
    data = chat_file(tinker_lab.files / "pirate.jsonl")
    code = (
        "import sys; sys.modules['tinker'] = None\n"
        "from labmgr.cli import main\n"
        f"sys.argv = ['labmgr', 'finetune', 'create', {str(data)!r}, '--base', {BASE_MODEL!r},"
        " '--provider', 'tinker']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "pip install 'labmgr[tinker]'" in output
    assert "Traceback" not in output
    assert lab_jobs(tinker_lab.settings) == []


def test_the_worker_outlives_the_command_and_never_sees_the_key_in_argv_db_or_log(
    tinker_lab: TinkerLab,
) -> None:
    data = chat_file(tinker_lab.files / "pirate.jsonl", n=12, weights=True)
    command = ["finetune", "create", str(data), "--base", BASE_MODEL, "--provider", "tinker"]
    done = subprocess.run(
        [sys.executable, "-m", "labmgr", *command, "--batch-size", "6", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(done.stdout)
    assert row["key_env"] == "TINKER_API_KEY" and row["provider"] == "tinker"
    argv = Path(f"/proc/{row['progress']['pid']}/cmdline").read_bytes()
    assert TINKER_KEY.encode() not in argv and row["id"].encode() in argv
    wait_until_final(tinker_lab.settings)  # the command that started it has exited
    (job,) = lab_jobs(tinker_lab.settings)
    assert job.status == "succeeded", job.error_message
    log = Path(job.progress["log"])
    assert "step 2/2" in log.read_text()
    for path in [log, *tinker_lab.settings.home.rglob("*.db*")]:
        assert TINKER_KEY.encode() not in path.read_bytes(), path
    assert os.environ["TINKER_API_KEY"] == TINKER_KEY


def test_a_suffix_that_cannot_name_checkpoints_is_refused(tinker_lab: TinkerLab) -> None:
    data = chat_file(tinker_lab.files / "pirate.jsonl")
    result = _create(str(data), "--base", BASE_MODEL, "--suffix", "a/b")
    assert result.exit_code == 1
    assert "Suffix 'a/b' cannot name Tinker checkpoints" in result.output


def test_jobs_whose_worker_cannot_start_are_recorded_failed_not_left_queued(
    tinker_lab: TinkerLab,
) -> None:
    (tinker_lab.settings.home / "tinker_runs").write_text("")  # a file where the logs go
    data = chat_file(tinker_lab.files / "pirate.jsonl", n=12)
    command = ["finetune", "create", str(data), "--base", BASE_MODEL, "--provider", "tinker"]
    result = runner.invoke(app, [*command, "--seeds", "2"])
    assert result.exit_code == 1, result.output
    assert "Cannot write the worker's log" in result.stderr

    updated = runner.invoke(app, ["jobs", "update", "--json"])
    assert json.loads(updated.stdout)["still_running"] is False
    jobs = lab_jobs(tinker_lab.settings)
    assert len(jobs) == 2 and {job.status for job in jobs} == {"failed"}
    assert all("Cannot write the worker's log" in (job.error_message or "") for job in jobs)

    (tinker_lab.settings.home / "tinker_runs").unlink()  # fixed: resume starts it
    resumed = runner.invoke(app, ["finetune", "resume", jobs[0].id, "--from-start"])
    assert resumed.exit_code == 0, resumed.output
    wait_until_final(tinker_lab.settings)
    statuses = {job.id: job.status for job in lab_jobs(tinker_lab.settings)}
    assert statuses == {jobs[0].id: "succeeded", jobs[1].id: "failed"}
