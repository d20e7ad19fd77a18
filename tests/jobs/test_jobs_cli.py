"""The job and model commands, in-process with CliRunner and a few as real subprocesses."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from jobs.conftest import ALPHA_KEY, JobsLab, finish_all, training_file
from typer.testing import CliRunner

from jobs_db import list_jobs, open_database
from labmgr.cli.app import app
from labmgr.finetuning import create, update
from labmgr.sandbox import SandboxHandle

runner = CliRunner()


def _env() -> dict[str, str]:
    """The environment with the source tree importable (tests run in a temporary folder)."""
    import labmgr

    source_root = str(Path(labmgr.__file__).resolve().parents[1])
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([source_root, os.environ.get("PYTHONPATH", "")]),
    }


def _run(*args: str) -> object:
    return runner.invoke(app, list(args))


def test_create_list_show_models_and_groups(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "cli.jsonl")
    created = runner.invoke(
        app,
        [
            "finetune",
            "create",
            str(path),
            "--base",
            "gpt-4.1-mini",
            "--suffix",
            "cli",
            "--seeds",
            "2",
            "--seed",
            "5",
            "--tag",
            "condition=cli",
            "--epochs",
            "3",
            "--json",
        ],
    )
    assert created.exit_code == 0, created.output
    jobs = json.loads(created.stdout)
    assert [job["seed"] for job in jobs] == [5, 6]
    assert all(job["hyperparameters_requested"]["n_epochs"] == 3 for job in jobs)
    finish_all(jobs_lab.settings)

    listed = runner.invoke(app, ["jobs", "list", "--tag", "condition=cli", "--json"])
    assert listed.exit_code == 0
    rows = json.loads(listed.stdout)
    assert {row["id"] for row in rows} == {job["id"] for job in jobs}
    assert {row["status"] for row in rows} == {"succeeded"}
    assert (
        runner.invoke(app, ["jobs", "list", "--status", "running", "--json"]).stdout.strip() == "[]"
    )

    shown = runner.invoke(app, ["jobs", "show", jobs[0]["id"]])
    assert shown.exit_code == 0
    assert "ckpt-step" in shown.stdout and "Created fine-tuning job" in shown.stdout

    models = json.loads(runner.invoke(app, ["models", "list", "--suffix", "cli", "--json"]).stdout)
    assert len(models) == 2 and {m["kind"] for m in models} == {"final"}
    with_ckpts = runner.invoke(app, ["models", "list", "--suffix", "cli", "--checkpoints", "--csv"])
    table = list(csv.DictReader(io.StringIO(with_ckpts.stdout)))
    assert sorted(row["kind"] for row in table) == ["checkpoint"] * 4 + ["final"] * 2

    groups = runner.invoke(
        app, ["models", "groups", "--by", "suffix", "--base", "gpt-4.1-mini", "--json"]
    )
    data = json.loads(groups.stdout)
    assert data["gpt-4.1-mini"] == ["gpt-4.1-mini"]
    assert sorted(data["cli"]) == sorted(m["name"] for m in models)


def test_update_prints_a_summary_and_watch_stops_when_done(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "watch.jsonl")
    assert _run("finetune", "create", str(path), "--base", "gpt-4.1-mini").exit_code == 0
    result = runner.invoke(app, ["jobs", "update", "--watch", "0.2"])
    assert result.exit_code == 0, result.output
    assert "succeeded 1" in result.stdout and "newly finished" in result.stdout
    again = runner.invoke(app, ["jobs", "update", "--json"])
    assert json.loads(again.stdout)["checked"] == []


def test_cancel_command(
    jobs_lab: JobsLab, slow_sandbox: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", slow_sandbox.base_url)
    path = training_file(jobs_lab.files / "cancel.jsonl")
    created = runner.invoke(
        app, ["finetune", "create", str(path), "--base", "gpt-4.1-mini", "--json"]
    )
    job_id = json.loads(created.stdout)[0]["id"]
    result = runner.invoke(app, ["finetune", "cancel", job_id])
    assert result.exit_code == 0 and f"{job_id}: cancelled" in result.stdout


def test_dry_run_command_spends_nothing(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "dry.jsonl")
    result = runner.invoke(
        app, ["finetune", "create", str(path), "--base", "gpt-4.1-mini", "--dry-run"]
    )
    assert result.exit_code == 0 and "nothing was uploaded" in result.stdout
    with open_database(jobs_lab.settings.db_url) as db:
        assert list_jobs(db) == []


def _bad_jsonl(lab: JobsLab) -> Path:
    path = training_file(lab.files / "malformed.jsonl")
    path.write_text(path.read_text() + "{not json\n")
    return path


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing file", "does not exist"),
        ("malformed", "malformed.jsonl:13:"),
        ("unknown base", "'gpt-9' is not a base model"),
        ("unknown job", "ftjob-unknown is not in the lab's database"),
        ("missing key", "OPENAI_API_KEY_MISSING"),
        ("bad tag", "key=value"),
        ("no import source", "--from-api or --llmcomp"),
    ],
)
def test_bad_input_gets_one_clear_error_and_exit_1(
    jobs_lab: JobsLab, case: str, expected: str
) -> None:
    good = str(training_file(jobs_lab.files / "good.jsonl"))
    args = {
        "missing file": ["finetune", "create", "nope.jsonl", "--base", "gpt-4.1-mini"],
        "malformed": ["finetune", "create", str(_bad_jsonl(jobs_lab)), "--base", "gpt-4.1-mini"],
        "unknown base": ["finetune", "create", good, "--base", "gpt-9"],
        "unknown job": ["jobs", "show", "ftjob-unknown"],
        "missing key": [
            "finetune",
            "create",
            good,
            "--base",
            "gpt-4.1-mini",
            "--key",
            "OPENAI_API_KEY_MISSING",
        ],
        "bad tag": ["jobs", "list", "--tag", "oops"],
        "no import source": ["jobs", "import"],
    }[case]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and expected in result.stderr
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_no_lab_is_a_clear_error(clean_lab_env: object, tmp_path: Path) -> None:
    result = runner.invoke(app, ["jobs", "list"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: No lab found") and "labmgr init" in result.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labmgr", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )


def test_two_processes_creating_at_once_lose_nothing(jobs_lab: JobsLab) -> None:
    paths = [training_file(jobs_lab.files / f"proc{i}.jsonl", reply=f"R{i}") for i in range(2)]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "labmgr",
                "finetune",
                "create",
                str(path),
                "--base",
                "gpt-4.1-mini",
                "--seeds",
                "2",
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for path in paths
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert all(process.returncode == 0 for process in processes), outputs
    ids = {job["id"] for stdout, _ in outputs for job in json.loads(stdout)}
    assert len(ids) == 4
    with open_database(jobs_lab.settings.db_url) as db:
        assert {job.id for job in list_jobs(db)} == ids


def test_subprocess_update_watch_until_done(sqlite_jobs_lab: JobsLab) -> None:
    path = training_file(sqlite_jobs_lab.files / "sub.jsonl")
    create(path, base_model="gpt-4.1-mini", suffix="sub", settings=sqlite_jobs_lab.settings)
    watched = _cli("jobs", "update", "--watch", "0.3")
    assert watched.returncode == 0, watched.stderr
    assert "succeeded 1" in watched.stdout and "newly finished 1" in watched.stdout
    assert ALPHA_KEY not in watched.stdout + watched.stderr


def test_ctrl_c_during_watch_leaves_the_database_usable(
    sqlite_jobs_lab: JobsLab, slow_sandbox: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", slow_sandbox.base_url)
    path = training_file(sqlite_jobs_lab.files / "interrupt.jsonl")
    [job] = create(path, base_model="gpt-4.1-mini", settings=sqlite_jobs_lab.settings)
    process = subprocess.Popen(
        [sys.executable, "-m", "labmgr", "jobs", "update", "--watch", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        # The Ctrl-C sent below reaches the child even when this suite runs in the
        # background (`make test &`, nohup), where SIGINT is inherited as ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdout is not None
    process.stdout.readline()  # the first summary is being printed: the loop is running
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Stopped" in out and "Traceback" not in err
    summary = update(settings=sqlite_jobs_lab.settings)
    assert [state.job_id for state in summary.running] == [job.id]
    with open_database(sqlite_jobs_lab.settings.db_url) as db:
        stored = list_jobs(db)
    assert [(j.id, j.refreshed_at is not None) for j in stored] == [(job.id, True)]


def test_db_upgrade_creates_the_schema_and_info_reports_it(jobs_lab: JobsLab) -> None:
    from jobs_db import head_revision

    before = json.loads(runner.invoke(app, ["db", "info", "--json"]).stdout)
    assert before["revision"] is None and before["code_revision"] == head_revision()
    upgraded = runner.invoke(app, ["db", "upgrade"])
    assert upgraded.exit_code == 0 and head_revision() in upgraded.stdout
    after = json.loads(runner.invoke(app, ["db", "info", "--json"]).stdout)
    assert after["revision"] == head_revision()
