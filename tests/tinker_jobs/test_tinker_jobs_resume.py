"""A Tinker worker killed mid-run: `jobs update` fails its job with the tail of its log, and
`finetune resume` finishes it from its last saved state; `finetune cancel` stops a worker."""

from __future__ import annotations

import os
import re
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fixtures.tinker import BASE_MODEL
from tinker_jobs.conftest import TinkerLab, chat_file, wait_until_final
from typer.testing import CliRunner

from jobs_db import FinetuneJob, get_job, job_curves, job_models, upsert_job
from labmgr.cli.app import app
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.tinker.create import create_tinker
from labmgr.settings import Settings

runner = CliRunner()


def _job(settings: Settings, job_id: str) -> FinetuneJob:
    with lab_database(settings) as db:
        job = get_job(db, job_id)
    assert job is not None
    return job


def _wait_for_step(settings: Settings, job_id: str, step: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while (_job(settings, job_id).progress or {}).get("step", 0) < step:
        assert time.monotonic() < deadline, f"job {job_id} never reached step {step}"
        time.sleep(0.1)


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rpartition(")")[2].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def _slow_job(lab: TinkerLab, monkeypatch: pytest.MonkeyPatch, save_every: int) -> FinetuneJob:
    """A 12-step job whose worker waits 0.4 s after each step."""
    monkeypatch.setenv("LABMGR_TINKER_STEP_DELAY", "0.4")
    data = chat_file(lab.files / "pirate.jsonl", n=12)
    (job,) = create_tinker(
        data,
        base_model=BASE_MODEL,
        seed=3,
        batch_size=2,
        epochs=2,
        save_every=save_every,
        settings=lab.settings,
    )
    monkeypatch.delenv("LABMGR_TINKER_STEP_DELAY")
    return job


def test_killed_worker_fails_its_job_and_resume_finishes_from_the_saved_state(
    tinker_lab: TinkerLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tinker_lab.settings
    job = _slow_job(tinker_lab, monkeypatch, save_every=3)
    _wait_for_step(settings, job.id, 5)
    listed = runner.invoke(app, ["jobs", "list", "--wide"])
    assert re.search(r"running, step [56]/12, loss \d", listed.output), listed.output
    before = _job(settings, job.id)
    os.kill(before.progress["pid"], signal.SIGKILL)
    assert _gone(before.progress["pid"])

    listed = runner.invoke(app, ["jobs", "update"])
    assert listed.exit_code == 0, listed.output
    failed = _job(settings, job.id)
    assert failed.status == "failed"
    assert "stopped without recording an end" in (failed.error_message or "")
    assert "step 5/12" in (failed.error_message or "")  # the log's tail
    with lab_database(settings) as db:
        old_rows = {row[0]: row[1] for row in job_curves(db)[job.id].rows}
    state_step = failed.progress["state_step"]
    assert state_step in (3, 6)

    resumed = runner.invoke(app, ["finetune", "resume", job.id])
    assert resumed.exit_code == 0, resumed.output
    assert f"{job.id}: queued" in resumed.output
    wait_until_final(settings)
    done = _job(settings, job.id)
    assert done.status == "succeeded", done.error_message
    assert done.progress["training_run"] != before.progress["training_run"]
    with lab_database(settings) as db:
        rows = job_curves(db)[job.id].rows
        models = job_models(db, job.id)
    assert [row[0] for row in rows] == list(range(1, 13))  # each step once
    # The same batches from the restored weights and optimizer: the same losses again.
    for step in range(state_step + 1, max(old_rows) + 1):
        assert rows[step - 1][1] == pytest.approx(old_rows[step])
    assert [(m.kind, m.step) for m in models] == [
        ("checkpoint", 3),
        ("checkpoint", 6),
        ("checkpoint", 9),
        ("final", 12),
    ]
    assert done.fine_tuned_model == models[-1].name


def test_a_job_that_saved_no_state_is_resumed_only_from_the_start(
    tinker_lab: TinkerLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tinker_lab.settings
    job = _slow_job(tinker_lab, monkeypatch, save_every=0)
    _wait_for_step(settings, job.id, 2)
    cancelled = runner.invoke(app, ["finetune", "cancel", job.id])
    assert cancelled.exit_code == 0, cancelled.output
    assert f"{job.id}: cancelled" in cancelled.output
    stopped = _job(settings, job.id)
    assert "SIGTERM" in (stopped.error_message or "")  # recorded by the worker itself
    assert _gone(stopped.progress["pid"])

    refused = runner.invoke(app, ["finetune", "resume", job.id])
    assert refused.exit_code == 1
    assert "saved no state to resume from" in refused.output
    assert "--from-start" in refused.output

    again = runner.invoke(app, ["finetune", "resume", job.id, "--from-start"])
    assert again.exit_code == 0, again.output
    wait_until_final(settings)
    with lab_database(settings) as db:
        rows = job_curves(db)[job.id].rows
    assert _job(settings, job.id).status == "succeeded"
    assert [row[0] for row in rows] == list(range(1, 13))


def test_a_job_whose_training_file_changed_is_not_resumed_on_the_new_content(
    tinker_lab: TinkerLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tinker_lab.settings
    job = _slow_job(tinker_lab, monkeypatch, save_every=0)
    _wait_for_step(settings, job.id, 1)
    assert runner.invoke(app, ["finetune", "cancel", job.id]).exit_code == 0
    path = tinker_lab.files / "pirate.jsonl"
    chat_file(path, n=13)  # edited after the job was created

    resumed = runner.invoke(app, ["finetune", "resume", job.id, "--from-start"])
    assert resumed.exit_code == 0, resumed.output
    wait_until_final(settings)
    failed = _job(settings, job.id)
    assert failed.status == "failed"
    assert f"The training file {path} changed since the job was created" in (
        failed.error_message or ""
    )
    assert (failed.progress or {}).get("step", 0) == 0  # no step trained on the new content

    path.unlink()
    again = runner.invoke(app, ["finetune", "resume", job.id, "--from-start"])
    assert again.exit_code == 0, again.output
    wait_until_final(settings)
    assert f"The training file {path} is gone" in (_job(settings, job.id).error_message or "")


def test_a_worker_on_another_machine_is_not_recorded_cancelled_here(
    tinker_lab: TinkerLab,
) -> None:
    now = datetime.now(UTC)
    beating = {"pid": 4242, "host": "gpu-box-7", "heartbeat_at": now.isoformat(), "step": 3}
    with lab_database(tinker_lab.settings) as db:
        upsert_job(
            db,
            FinetuneJob(
                id="tinker-elsewhere1",
                provider="tinker",
                status="running",
                base_model=BASE_MODEL,
                progress=beating,
            ),
        )
    result = runner.invoke(app, ["finetune", "cancel", "tinker-elsewhere1"])
    assert result.exit_code == 1
    assert "runs on gpu-box-7, not on this machine" in result.stderr
    assert _job(tinker_lab.settings, "tinker-elsewhere1").status == "running"


def test_jobs_update_fails_a_worker_elsewhere_only_once_its_heartbeat_is_stale(
    tinker_lab: TinkerLab,
) -> None:
    settings = tinker_lab.settings
    now = datetime.now(UTC)
    for job_id, beat in (("tinker-fresh1", now), ("tinker-stale1", now - timedelta(hours=1))):
        progress = {"pid": 4242, "host": "gpu-box-7", "heartbeat_at": beat.isoformat(), "step": 2}
        with lab_database(settings) as db:
            upsert_job(
                db,
                FinetuneJob(
                    id=job_id,
                    provider="tinker",
                    status="running",
                    base_model=BASE_MODEL,
                    progress=progress,
                ),
            )
    result = runner.invoke(app, ["jobs", "update"])
    assert result.exit_code == 0, result.output
    assert _job(settings, "tinker-fresh1").status == "running"  # another machine trains it
    stale = _job(settings, "tinker-stale1")
    assert stale.status == "failed"
    assert "pid 4242 on gpu-box-7" in (stale.error_message or "")
    assert "stopped without recording an end, at step 2" in (stale.error_message or "")


def test_a_resume_whose_worker_cannot_start_leaves_the_job_failed_with_the_reason(
    tinker_lab: TinkerLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tinker_lab.settings
    job = _slow_job(tinker_lab, monkeypatch, save_every=0)
    _wait_for_step(settings, job.id, 1)
    assert runner.invoke(app, ["finetune", "cancel", job.id]).exit_code == 0
    log = Path(_job(settings, job.id).progress["log"])
    assert _gone(_job(settings, job.id).progress["pid"])
    log.unlink()
    log.mkdir()  # the log cannot be opened for writing

    resumed = runner.invoke(app, ["finetune", "resume", job.id, "--from-start"])
    assert resumed.exit_code == 1
    assert "Cannot write the worker's log" in resumed.stderr
    stuck = _job(settings, job.id)
    assert stuck.status == "failed"
    assert "Cannot write the worker's log" in (stuck.error_message or "")
