"""`update`: only non-final jobs, concurrently, with the key of each job's project."""

from __future__ import annotations

import threading

import pytest
from jobs.conftest import BETA_KEY, JobsLab, finish_all, requests_of, training_file
from openai.types.fine_tuning import FineTuningJobEvent

from jobs_db import get_job, job_events, job_models, open_database, select_models
from labmgr.errors import FineTuningApiError, UnknownJob
from labmgr.finetuning import cancel, create, update
from labmgr.finetuning.registry.records import job_phase
from labmgr.finetuning.sync.update import SAFETY_CHECK_ALLOWANCE
from labmgr.sandbox import SandboxHandle


def test_update_records_model_checkpoints_events_and_actual_hyperparameters(
    jobs_lab: JobsLab,
) -> None:
    path = training_file(jobs_lab.files / "full.jsonl", n=20)
    [job] = create(path, base_model="gpt-4.1-mini", suffix="full", settings=jobs_lab.settings)
    first = update(settings=jobs_lab.settings)
    assert [state.job_id for state in first.checked] == [job.id]
    finish_all(jobs_lab.settings)
    with open_database(jobs_lab.settings.db_url) as db:
        stored = get_job(db, job.id)
        models = job_models(db, job.id)
        events = job_events(db, job.id)
        checkpoints = select_models(db, suffix="full", checkpoints="only")
        finals = select_models(db, suffix="full")
    assert stored is not None and stored.status == "succeeded"
    assert stored.trained_tokens and stored.finished_at and stored.seed is not None
    hyper = stored.hyperparameters_actual or {}
    assert isinstance(hyper.get("n_epochs"), int) and isinstance(hyper.get("batch_size"), int)
    assert [m.name for m in finals] == [stored.fine_tuned_model]
    assert len(checkpoints) == 2
    assert all(
        c.step and c.epoch and (c.metrics or {}).get("train_loss") is not None for c in checkpoints
    )
    assert sorted(c.epoch for c in checkpoints) == [hyper["n_epochs"] - 2, hyper["n_epochs"] - 1]
    final = next(m for m in models if m.kind == "final")
    assert final.step is not None and final.step > max(c.step or 0 for c in checkpoints)
    messages = [e.message for e in events]
    assert any("usage policies" in (m or "") for m in messages)
    assert any((m or "").startswith("Created fine-tuning job") for m in messages)


def test_update_reports_newly_finished_once_then_makes_no_requests(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "quiet.jsonl")
    [job] = create(path, base_model="gpt-4.1-mini", suffix="quiet", settings=jobs_lab.settings)
    seen_finished = []
    for _ in range(200):
        summary = update(settings=jobs_lab.settings)
        seen_finished += [state.job_id for state in summary.newly_finished]
        if not summary.still_running:
            break
        threading.Event().wait(0.1)
    assert seen_finished == [job.id]
    before = sum(requests_of(jobs_lab.sandbox).values())
    again = update(settings=jobs_lab.settings)
    assert again.checked == [] and again.requests == 0
    assert sum(requests_of(jobs_lab.sandbox).values()) == before


def _event(message: str, *, data: dict | None = None) -> FineTuningJobEvent:
    return FineTuningJobEvent.model_validate(
        {
            "id": "ftevent-x",
            "object": "fine_tuning.job.event",
            "created_at": 0,
            "level": "info",
            "message": message,
            "data": data,
            "type": "metrics" if data else "message",
        }
    )


def test_phase_comes_from_the_newest_events() -> None:
    started = _event("Fine-tuning job started")
    step = _event("Step 3/10: training loss=1.0", data={"step": 3, "total_steps": 10})
    policy = _event("Evaluating model against our usage policies before enabling")
    assert job_phase("queued", []) == "queued"
    assert job_phase("running", [started]) == "training"
    assert job_phase("running", [step, started]) == "training (step 3/10)"
    assert job_phase("running", [policy, step, started]).startswith("usage policy evaluation")
    assert job_phase("succeeded", [policy]) is None


def test_eta_of_a_running_job_includes_the_safety_evaluation(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "eta.jsonl", n=50)
    create(path, base_model="gpt-4.1-mini", suffix="eta", settings=jobs_lab.settings)
    seen = []
    for _ in range(300):
        summary = update(settings=jobs_lab.settings)
        seen += [s for s in summary.running if s.status == "running" and s.estimated_finish]
        if not summary.still_running:
            break
        threading.Event().wait(0.02)
    for state in seen:
        assert state.estimated_finish is not None and state.real_eta is not None
        assert state.real_eta - state.estimated_finish == SAFETY_CHECK_ALLOWANCE
        assert state.phase


def test_each_job_is_refreshed_with_a_key_of_its_own_organization(
    jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY_BETA", BETA_KEY)
    path = training_file(jobs_lab.files / "multi.jsonl")
    [alpha] = create(path, base_model="gpt-4.1-mini", suffix="org-a", settings=jobs_lab.settings)
    [beta] = create(
        path,
        base_model="gpt-4.1-mini",
        suffix="org-b",
        key_env="OPENAI_API_KEY_BETA",
        settings=jobs_lab.settings,
    )
    assert (alpha.organization_id, beta.organization_id) == ("org-alpha", "org-beta")
    jobs_lab.sandbox.reset()
    summary = update(settings=jobs_lab.settings)
    keys = {state.job_id: state.key_env for state in summary.checked}
    assert keys == {alpha.id: "OPENAI_API_KEY", beta.id: "OPENAI_API_KEY_BETA"}
    stats = jobs_lab.sandbox.stats()
    assert stats["requests"]["fine_tuning.jobs.retrieve"] == 2
    assert "404" not in stats["statuses"]


def test_a_job_without_a_key_of_its_project_is_listed_with_the_reason(
    jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY_BETA", BETA_KEY)
    path = training_file(jobs_lab.files / "orphan.jsonl")
    [beta] = create(
        path,
        base_model="gpt-4.1-mini",
        suffix="orphan",
        key_env="OPENAI_API_KEY_BETA",
        settings=jobs_lab.settings,
    )
    monkeypatch.delenv("OPENAI_API_KEY_BETA")
    summary = update(settings=jobs_lab.settings)
    [unchecked] = summary.unchecked
    assert unchecked.job_id == beta.id
    assert "proj_beta" in unchecked.reason and "OPENAI_API_KEY_BETA" in unchecked.reason


def test_two_updates_at_once_are_safe(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "twice.jsonl")
    jobs = create(path, base_model="gpt-4.1-mini", seeds=3, settings=jobs_lab.settings)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(200):
                if not update(settings=jobs_lab.settings).still_running:
                    return
                threading.Event().wait(0.05)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with open_database(jobs_lab.settings.db_url) as db:
        for job in jobs:
            stored = get_job(db, job.id)
            assert stored is not None and stored.status == "succeeded"
            assert len([m for m in job_models(db, job.id) if m.kind == "checkpoint"]) == 2


def test_cancel_stops_a_job_and_records_it(
    jobs_lab: JobsLab, slow_sandbox: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", slow_sandbox.base_url)
    path = training_file(jobs_lab.files / "stop.jsonl")
    [job] = create(path, base_model="gpt-4.1-mini", suffix="stop", settings=jobs_lab.settings)
    cancelled = cancel(job.id, settings=jobs_lab.settings)
    assert cancelled.status == "cancelled"
    with pytest.raises(FineTuningApiError, match=job.id):
        cancel(job.id, settings=jobs_lab.settings)
    with pytest.raises(UnknownJob, match="ftjob-nope"):
        cancel("ftjob-nope", settings=jobs_lab.settings)
    assert update(settings=jobs_lab.settings).checked == []


def test_update_inside_an_event_loop_points_to_aupdate(jobs_lab: JobsLab) -> None:
    import asyncio

    from labmgr.errors import LabmgrError
    from labmgr.finetuning import aupdate

    async def inside() -> int:
        with pytest.raises(LabmgrError, match="aupdate"):
            update(settings=jobs_lab.settings)
        return len((await aupdate(settings=jobs_lab.settings)).checked)

    assert asyncio.run(inside()) == 0


def test_update_with_the_api_failing_lists_each_job_unchecked_and_records_nothing(
    jobs_lab: JobsLab,
) -> None:
    from typer.testing import CliRunner

    from labmgr.cli.app import app

    path = training_file(jobs_lab.files / "down.jsonl")
    [job] = create(path, base_model="gpt-4.1-mini", suffix="down", settings=jobs_lab.settings)
    sandbox = jobs_lab.sandbox
    sandbox.set_faults(rate_500=1.0, endpoints=["fine_tuning.jobs.retrieve"])
    try:
        failing = CliRunner().invoke(app, ["jobs", "update"])
    finally:
        sandbox.reset()
    assert failing.exit_code == 1, failing.output
    assert f"{job.id} (down): OPENAI_API_KEY: HTTP 500" in failing.stdout
    assert failing.stderr.startswith("Error: 1 of 1 unfinished jobs could not be checked")

    sandbox.set_faults(rate_drop=1.0, endpoints=["fine_tuning.jobs.retrieve"])
    try:
        unreachable = update(settings=jobs_lab.settings)
    finally:
        sandbox.reset()
    assert [(u.job_id, u.reason) for u in unreachable.unchecked] == [
        (job.id, f"could not reach {sandbox.base_url}")
    ]
    with open_database(jobs_lab.settings.db_url) as db:
        stored = get_job(db, job.id)
    assert stored is not None and stored.status == job.status
    assert stored.refreshed_at == job.refreshed_at


def test_update_on_a_read_only_database_is_one_error_sentence(
    sqlite_jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from labmgr.cli.app import app

    path = training_file(sqlite_jobs_lab.files / "frozen.jsonl")
    create(path, base_model="gpt-4.1-mini", settings=sqlite_jobs_lab.settings)
    database = sqlite_jobs_lab.settings.db_url.removeprefix("sqlite:///")
    monkeypatch.setenv("LABMGR_DB_URL", f"sqlite:///file:{database}?mode=ro&uri=true")
    result = CliRunner().invoke(app, ["jobs", "update"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("Error: ") and "read-only" in result.stderr
