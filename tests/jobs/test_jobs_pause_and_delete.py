"""Pausing and resuming jobs, cancelling a job queued locally, and deleting fine-tuned models,
through the CLI and Python on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import openai
import pytest
from jobs.conftest import ALPHA_KEY, JobsLab, finish_all, requests_of, training_file
from openai import OpenAI
from typer.testing import CliRunner

from jobs_db import (
    FinetuneJob,
    claim_queued_job,
    get_job,
    job_events,
    open_database,
    select_models,
    upsert_job,
)
from labmgr.cli.app import app
from labmgr.errors import FineTuningApiError, UnknownModel
from labmgr.finetuning import (
    create,
    delete_model,
    pause,
    resume,
    update,
)
from labmgr.sandbox import SandboxHandle, run_sandbox

runner = CliRunner()


@pytest.fixture
def paced(jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch) -> Iterator[SandboxHandle]:
    """A sandbox whose jobs take four seconds (running after about one)."""
    with run_sandbox(job_seconds=4.0) as own:
        monkeypatch.setenv("OPENAI_BASE_URL", own.base_url)
        yield own


def _status(lab: JobsLab, job_id: str) -> str:
    with open_database(lab.settings.db_url) as db:
        job = get_job(db, job_id)
    assert job is not None
    return job.status


def _wait_until_running(lab: JobsLab, job_id: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        update(settings=lab.settings)
        if _status(lab, job_id) == "running":
            return
        assert time.monotonic() < deadline, "the job never started running"
        time.sleep(0.2)


def test_a_paused_job_stays_paused_until_resumed_then_finishes(
    jobs_lab: JobsLab, paced: SandboxHandle
) -> None:
    path = training_file(jobs_lab.files / "pausable.jsonl")
    [job] = create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    _wait_until_running(jobs_lab, job.id)

    result = runner.invoke(app, ["finetune", "pause", job.id])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"{job.id}: paused"
    time.sleep(4.5)  # longer than the whole job would have taken
    summary = update(settings=jobs_lab.settings)
    assert [state.status for state in summary.checked] == ["paused"]
    with pytest.raises(FineTuningApiError, match="refused to pause"):
        pause(job.id, settings=jobs_lab.settings)

    resumed = resume(job.id, settings=jobs_lab.settings)
    assert resumed.status == "queued" and _status(jobs_lab, job.id) == "queued"
    finish_all(jobs_lab.settings)
    assert _status(jobs_lab, job.id) == "succeeded"
    with open_database(jobs_lab.settings.db_url) as db:
        events = [e.message for e in job_events(db, job.id)]
    assert "Fine-tuning job paused" in events and "Fine-tuning job resumed" in events


def test_a_job_queued_locally_cannot_be_paused_but_can_be_cancelled(
    jobs_lab: JobsLab, paced: SandboxHandle
) -> None:
    paced.set_faults(daily_job_limit=0)
    path = training_file(jobs_lab.files / "held.jsonl")
    [queued] = create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    paused = runner.invoke(app, ["finetune", "pause", queued.id])
    assert paused.exit_code == 1
    assert "is queued locally" in paused.stderr and "not on the API yet" in paused.stderr
    before = requests_of(paced)
    cancelled = runner.invoke(app, ["finetune", "cancel", queued.id])
    assert cancelled.exit_code == 0 and cancelled.stdout.strip() == f"{queued.id}: cancelled"
    assert requests_of(paced) == before  # never on the API: no request
    paced.set_faults(daily_job_limit=None)
    assert update(settings=jobs_lab.settings).submitted == []


def _queued_and_claimed(lab: JobsLab, sandbox: SandboxHandle, lease: timedelta) -> FinetuneJob:
    """A job queued at the daily limit, then claimed by an update holding it for `lease`."""
    sandbox.set_faults(daily_job_limit=0)
    [queued] = create(
        training_file(lab.files / "claimed.jsonl"), base_model="gpt-4.1-mini", settings=lab.settings
    )
    sandbox.set_faults(daily_job_limit=None)
    now = datetime.now(UTC)
    with open_database(lab.settings.db_url) as db:
        upsert_job(db, FinetuneJob(id=queued.id, not_before=now - timedelta(seconds=1)))
        claim = claim_queued_job(db, owner="other-update", now=now, lease=lease)
    assert claim is not None and claim.job.id == queued.id and claim.job.create_request
    return claim.job


def test_a_queued_job_being_sent_right_now_is_not_cancelled(
    jobs_lab: JobsLab, paced: SandboxHandle
) -> None:
    queued = _queued_and_claimed(jobs_lab, paced, timedelta(minutes=15))
    result = runner.invoke(app, ["finetune", "cancel", queued.id])
    assert result.exit_code == 1
    assert "being sent to the API" in result.stderr and "jobs update" in result.stderr
    assert _status(jobs_lab, queued.id) == "queued_locally"


def test_a_queued_job_a_crashed_update_sent_is_not_cancelled_only_in_the_lab(
    jobs_lab: JobsLab, paced: SandboxHandle
) -> None:
    # An update claimed the job, sent it, and died before recording the API's job.
    queued = _queued_and_claimed(jobs_lab, paced, timedelta(seconds=-1))
    client = OpenAI(base_url=paced.base_url, api_key=ALPHA_KEY, max_retries=0)
    sent = client.fine_tuning.jobs.create(**(queued.create_request or {}))
    client.close()

    result = runner.invoke(app, ["finetune", "cancel", queued.id])
    assert result.exit_code == 1, result.output
    assert sent.id in result.stderr and "jobs update" in result.stderr
    assert _status(jobs_lab, queued.id) == "queued_locally"  # still followed: it is training

    summary = update(settings=jobs_lab.settings)
    assert [(s.queued_id, s.job_id) for s in summary.submitted] == [(queued.id, sent.id)]
    cancelled = runner.invoke(app, ["finetune", "cancel", sent.id])
    assert cancelled.exit_code == 0, cancelled.output
    assert _status(jobs_lab, sent.id) == "cancelled"


def test_a_queued_job_a_crashed_update_never_sent_is_cancelled_in_the_lab(
    jobs_lab: JobsLab, paced: SandboxHandle
) -> None:
    queued = _queued_and_claimed(jobs_lab, paced, timedelta(seconds=-1))
    before = requests_of(paced).get("fine_tuning.jobs.create", 0)
    result = runner.invoke(app, ["finetune", "cancel", queued.id])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"{queued.id}: cancelled"
    assert _status(jobs_lab, queued.id) == "cancelled"
    assert update(settings=jobs_lab.settings).submitted == []
    assert requests_of(paced).get("fine_tuning.jobs.create", 0) == before


def test_a_deleted_model_answers_404_and_leaves_its_group(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "doomed.jsonl")
    jobs = create(
        path, base_model="gpt-4.1-mini", suffix="doomed", seeds=2, settings=jobs_lab.settings
    )
    finish_all(jobs_lab.settings)
    with open_database(jobs_lab.settings.db_url) as db:
        models = select_models(db, suffix="doomed")
    assert len(models) == 2
    gone, kept = models[0].name, models[1].name

    result = runner.invoke(app, ["models", "delete", gone, "--yes"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{gone}: deleted")
    client = OpenAI(base_url=jobs_lab.sandbox.base_url, api_key=ALPHA_KEY, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model=gone, messages=[{"role": "user", "content": "Hi"}])
    client.close()

    groups = json.loads(runner.invoke(app, ["models", "groups", "--no-base", "--json"]).stdout)
    assert groups == {"doomed": [kept]}
    every = json.loads(
        runner.invoke(app, ["models", "groups", "--no-base", "--include-deleted", "--json"]).stdout
    )
    assert sorted(every["doomed"]) == sorted([gone, kept])
    listed = runner.invoke(app, ["models", "list", "--include-deleted", "--wide"])
    assert "final (deleted)" in listed.stdout

    before = requests_of(jobs_lab.sandbox).get("models.delete", 0)
    again = delete_model(gone, settings=jobs_lab.settings)  # already marked: no request
    assert again.deleted_at is not None
    assert requests_of(jobs_lab.sandbox).get("models.delete", 0) == before
    assert {job.id for job in jobs} == {m.job_id for m in models}


def test_models_delete_asks_first_and_marks_a_model_deleted_elsewhere(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "asked.jsonl")
    create(path, base_model="gpt-4.1-mini", suffix="asked", settings=jobs_lab.settings)
    finish_all(jobs_lab.settings)
    with open_database(jobs_lab.settings.db_url) as db:
        [model] = select_models(db, suffix="asked")
    before = requests_of(jobs_lab.sandbox).get("models.delete", 0)

    declined = runner.invoke(app, ["models", "delete", model.name], input="n\n")
    assert declined.exit_code == 1
    assert requests_of(jobs_lab.sandbox).get("models.delete", 0) == before
    with open_database(jobs_lab.settings.db_url) as db:
        assert [m.name for m in select_models(db, suffix="asked")] == [model.name]

    client = OpenAI(base_url=jobs_lab.sandbox.base_url, api_key=ALPHA_KEY, max_retries=0)
    client.models.delete(model.name)  # deleted outside the lab
    client.close()
    confirmed = runner.invoke(app, ["models", "delete", model.name], input="y\n")
    assert confirmed.exit_code == 0, confirmed.output
    with open_database(jobs_lab.settings.db_url) as db:
        assert select_models(db, suffix="asked") == []
        [gone] = select_models(db, suffix="asked", include_deleted=True)
    assert gone.deleted_at is not None


def test_deleting_a_base_or_unknown_model_is_refused(jobs_lab: JobsLab) -> None:
    with pytest.raises(UnknownModel, match="not in the lab's database"):
        delete_model("ft:gpt-4.1-mini:lab:never:AAAA", settings=jobs_lab.settings)
    result = runner.invoke(app, ["models", "delete", "gpt-4.1-mini", "--yes"])
    assert result.exit_code == 1
    assert "Error: " in result.stderr and "gpt-4.1-mini" in result.stderr
