"""A job's life computed from its record: statuses, steps and actions in time order."""

from __future__ import annotations

from typing import Any

from labmgr.sandbox.job_timeline import build_timeline


def _job(**changes: Any) -> dict[str, Any]:
    job = {
        "id": "ftjob-t",
        "created_at": 1000.0,
        "job_seconds": 10.0,
        "training_file": "file-t",
        "validation_file": None,
        "error": None,
        "seed": 1,
        "n_examples": 10,
        "hyperparameters": {"n_epochs": 3, "batch_size": 1, "learning_rate_multiplier": 1.8},
        "fine_tuned_model": "ft:base:org::AAAAAAAA",
        "checkpoint_models": {
            "10": "ft:base:org::BBBBBBBB:ckpt-step-10",
            "20": "ft:base:org::CCCCCCCC:ckpt-step-20",
            "30": "ft:base:org::AAAAAAAA",
        },
        "actions": [],
    }
    job.update(changes)
    return job


def _statuses(job: dict[str, Any]) -> list[tuple[float, str]]:
    return [(e.at, e.status) for e in build_timeline(job) if e.kind == "status"]


def test_plain_job_moves_through_the_phases_over_job_seconds() -> None:
    assert _statuses(_job()) == [
        (1000.0, "validating_files"),
        (1001.0, "queued"),
        (1002.0, "running"),
        (1010.0, "succeeded"),
    ]


def test_entries_are_in_time_order_and_steps_appear_once() -> None:
    job = _job(actions=[{"kind": "pause", "at": 1005.0}, {"kind": "resume", "at": 1100.0}])
    timeline = build_timeline(job)
    times = [e.at for e in timeline]
    assert times == sorted(times)
    steps = [e.data["step"] for e in timeline if e.type == "metrics" and e.data]
    assert steps == sorted(set(steps)) and steps[-1] == 30
    assert [e.step for e in timeline if e.kind == "checkpoint"] == [10, 20, 30]


def test_pause_freezes_progress_and_resume_queues_the_rest() -> None:
    job = _job(actions=[{"kind": "pause", "at": 1006.0}, {"kind": "resume", "at": 1100.0}])
    assert _statuses(job) == [
        (1000.0, "validating_files"),
        (1001.0, "queued"),
        (1002.0, "running"),
        (1006.0, "paused"),
        (1100.0, "queued"),
        (1101.0, "running"),
        (1105.0, "succeeded"),  # half the run was done before the pause
    ]


def test_cancel_while_paused_or_running_ends_the_job() -> None:
    paused = _job(actions=[{"kind": "pause", "at": 1003.0}, {"kind": "cancel", "at": 1050.0}])
    assert _statuses(paused)[-1] == (1050.0, "cancelled")
    running = _job(actions=[{"kind": "cancel", "at": 1004.0}])
    assert _statuses(running)[-1] == (1004.0, "cancelled")
    assert not any(e.kind == "checkpoint" and e.at > 1004.0 for e in build_timeline(running))


def test_invalid_file_fails_after_validation() -> None:
    error = {"code": "invalid_training_file", "message": "bad line 3", "param": "training_file"}
    timeline = build_timeline(_job(error=error))
    assert [(e.at, e.status) for e in timeline if e.kind == "status"][-1] == (1001.0, "failed")
    assert timeline[-2].level == "error" and timeline[-2].message == "bad line 3"
