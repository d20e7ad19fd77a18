"""A queue through the daily job limit: jobs the limit held back are recorded, listed with the
time they can go, sent by `jobs update` when a slot frees, and never sent twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from jobs.conftest import ALPHA_KEY, BETA_KEY, JobsLab, finish_all, requests_of, training_file
from openai import OpenAI
from typer.testing import CliRunner

from jobs_db import (
    QUEUED_LOCALLY,
    FinetuneJob,
    claim_queued_job,
    get_job,
    list_jobs,
    open_database,
    queued_jobs,
    upsert_job,
)
from labmgr.cli.app import app
from labmgr.finetuning import create, update
from labmgr.finetuning.jobs import queue as job_queue
from labmgr.sandbox import SandboxHandle, run_sandbox

runner = CliRunner()


@pytest.fixture
def limited(jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch) -> Iterator[SandboxHandle]:
    """A sandbox of its own (the daily limit counts every job it holds), used by the lab."""
    with run_sandbox(job_seconds=0.5) as own:
        monkeypatch.setenv("OPENAI_BASE_URL", own.base_url)
        yield own


def _make_due(lab: JobsLab) -> None:
    """Move every queued job's time into the past, as if the day had gone by."""
    past = datetime.now(UTC) - timedelta(seconds=1)
    with open_database(lab.settings.db_url) as db:
        for job in queued_jobs(db):
            upsert_job(db, FinetuneJob(id=job.id, not_before=past))


def _jobs(lab: JobsLab) -> list[FinetuneJob]:
    with open_database(lab.settings.db_url) as db:
        return list_jobs(db)


def test_jobs_over_the_limit_are_listed_as_queued_with_the_time_they_can_go(
    jobs_lab: JobsLab, limited: SandboxHandle
) -> None:
    limited.set_faults(daily_job_limit=1)
    path = training_file(jobs_lab.files / "over.jsonl")
    result = runner.invoke(
        app,
        ["finetune", "create", str(path), "--base", "gpt-4.1-mini", "--seeds", "3", "--seed", "1"],
    )
    assert result.exit_code == 0, result.output
    assert "2 job(s) queued locally" in result.stdout and "jobs update" in result.stdout

    listed = runner.invoke(app, ["jobs", "list", "--wide"])
    assert listed.exit_code == 0
    queued_lines = [line for line in listed.stdout.splitlines() if "queued-" in line]
    assert len(queued_lines) == 2
    assert all("queued locally, from" in line for line in queued_lines)
    rows = json.loads(
        runner.invoke(app, ["jobs", "list", "--status", QUEUED_LOCALLY, "--json"]).stdout
    )
    queued = [row for row in rows if row["status"] == QUEUED_LOCALLY]
    assert len(queued) == len(rows) == 2
    assert sorted(row["seed_requested"] for row in queued) == [2, 3]
    assert all(row["not_before"] for row in queued)

    before = limited.stats()["requests"]["fine_tuning.jobs.create"]
    summary = update(settings=jobs_lab.settings)  # not due yet: nothing is sent
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == before
    assert sorted(q.job_id for q in summary.queued) == sorted(row["id"] for row in queued)
    assert summary.still_running


def test_update_sends_queued_jobs_once_a_slot_frees_keeping_their_tags(
    jobs_lab: JobsLab, limited: SandboxHandle
) -> None:
    limited.set_faults(daily_job_limit=1)
    path = training_file(jobs_lab.files / "later.jsonl")
    jobs = create(
        path,
        base_model="gpt-4.1-mini",
        seeds=2,
        seed=10,
        tags={"condition": "later"},
        epochs=2,
        settings=jobs_lab.settings,
    )
    queued = jobs[1]
    assert queued.status == QUEUED_LOCALLY

    # Refused again (the limit still holds): it waits for the next slot, one request spent.
    _make_due(jobs_lab)
    creates = limited.stats()["requests"]["fine_tuning.jobs.create"]
    refused = update(settings=jobs_lab.settings)
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates + 1
    assert [q.job_id for q in refused.queued] == [queued.id]
    assert refused.queued[0].not_before is not None
    assert refused.queued[0].not_before > datetime.now(UTC) + timedelta(hours=23)

    limited.set_faults(daily_job_limit=None)  # the day went by
    _make_due(jobs_lab)
    sent = update(settings=jobs_lab.settings)
    assert [s.queued_id for s in sent.submitted] == [queued.id] and sent.queued == []
    finish_all(jobs_lab.settings)
    with open_database(jobs_lab.settings.db_url) as db:
        assert get_job(db, queued.id) is None
        new = get_job(db, sent.submitted[0].job_id)
    assert new is not None and new.status == "succeeded"
    assert new.tag_dict == {"condition": "later", "replica": "2"}
    assert new.seed == 11 and new.hyperparameters_requested == {
        "n_epochs": 2,
        "batch_size": "auto",
        "learning_rate_multiplier": "auto",
    }
    assert new.training_file_id == jobs[0].training_file_id
    assert limited.stats()["requests"]["files.create"] == 1


def test_jobs_update_says_which_queued_job_it_sent_as_which_api_job(
    jobs_lab: JobsLab, limited: SandboxHandle
) -> None:
    limited.set_faults(daily_job_limit=1)
    path = training_file(jobs_lab.files / "said.jsonl")
    jobs = create(
        path, base_model="gpt-4.1-mini", suffix="said", seeds=3, settings=jobs_lab.settings
    )
    limited.set_faults(daily_job_limit=2)  # one more slot: one queued job goes, one waits
    _make_due(jobs_lab)
    result = runner.invoke(app, ["jobs", "update"])
    assert result.exit_code == 0, result.output
    waiting = {job.id for job in _jobs(jobs_lab) if job.status == QUEUED_LOCALLY}
    [went] = [job.id for job in jobs[1:] if job.id not in waiting]
    [sent] = [
        job for job in _jobs(jobs_lab) if job.id.startswith("ftjob-") and job.id != jobs[0].id
    ]
    assert sent.suffix == "said"
    assert f"Sent {went} (said) as {sent.id}" in result.stdout
    listed = json.loads(runner.invoke(app, ["jobs", "update", "--json"]).stdout)
    assert listed["submitted"] == []  # sent once
    assert "1 job(s) still queued locally for a daily slot" in result.stdout


def test_a_raised_daily_limit_is_noticed_by_jobs_update(
    jobs_lab: JobsLab, limited: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited.set_faults(daily_job_limit=1)
    path = training_file(jobs_lab.files / "raised.jsonl")
    jobs = create(path, base_model="gpt-4.1-mini", seeds=3, settings=jobs_lab.settings)
    assert [job.status for job in jobs][1:] == [QUEUED_LOCALLY, QUEUED_LOCALLY]
    limited.set_faults(daily_job_limit=None)  # the organization's limit was raised
    creates = limited.stats()["requests"]["fine_tuning.jobs.create"]

    # The refusal is fresh (under PROBE_AFTER): the jobs wait for their slot, no request.
    waited = update(settings=jobs_lab.settings)
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates
    assert len(waited.queued) == 2 and waited.submitted == []

    # Five minutes on, one job is tried early; it is accepted, so the other goes too.
    monkeypatch.setattr(job_queue, "PROBE_AFTER", timedelta(0))
    sent = update(settings=jobs_lab.settings)
    assert sorted(s.queued_id for s in sent.submitted) == sorted(job.id for job in jobs[1:])
    assert sent.queued == []
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates + 2


def test_a_daily_limit_still_reached_costs_one_request_per_probe(
    jobs_lab: JobsLab, limited: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited.set_faults(daily_job_limit=1)
    path = training_file(jobs_lab.files / "held.jsonl")
    jobs = create(path, base_model="gpt-4.1-mini", seeds=3, settings=jobs_lab.settings)
    monkeypatch.setattr(job_queue, "PROBE_AFTER", timedelta(0))
    creates = limited.stats()["requests"]["fine_tuning.jobs.create"]

    probed = update(settings=jobs_lab.settings)
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates + 1
    assert sorted(q.job_id for q in probed.queued) == sorted(job.id for job in jobs[1:])
    assert all(
        q.not_before is not None and q.not_before > datetime.now(UTC) + timedelta(hours=23)
        for q in probed.queued
    )


def test_a_job_sent_by_a_process_that_crashed_is_found_not_sent_again(
    jobs_lab: JobsLab, limited: SandboxHandle
) -> None:
    limited.set_faults(daily_job_limit=0)
    path = training_file(jobs_lab.files / "crash.jsonl")
    [queued] = create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    limited.set_faults(daily_job_limit=None)
    _make_due(jobs_lab)
    # A process claims the job, sends it, and dies before recording the API's job.
    with open_database(jobs_lab.settings.db_url) as db:
        claim = claim_queued_job(
            db, owner="crashed", now=datetime.now(UTC), lease=timedelta(seconds=-1)
        )
    assert claim is not None and claim.job.create_request is not None
    client = OpenAI(base_url=limited.base_url, api_key=ALPHA_KEY, max_retries=0)
    sent = client.fine_tuning.jobs.create(**claim.job.create_request)
    client.close()

    creates = limited.stats()["requests"]["fine_tuning.jobs.create"]
    summary = update(settings=jobs_lab.settings)
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates
    assert [(s.queued_id, s.job_id) for s in summary.submitted] == [(queued.id, sent.id)]
    assert [job.id for job in _jobs(jobs_lab)] == [sent.id]


def test_a_queued_job_whose_send_could_not_be_checked_is_looked_up_not_sent_again(
    jobs_lab: JobsLab, limited: SandboxHandle
) -> None:
    limited.set_faults(daily_job_limit=0)
    path = training_file(jobs_lab.files / "unsure.jsonl")
    [queued] = create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    request_id = (queued.api_metadata or {})["labmgr_request"]
    _make_due(jobs_lab)
    # The create reaches the API but its response is lost, and so is every lookup.
    lost = ["fine_tuning.jobs.create", "fine_tuning.jobs.list"]
    limited.set_faults(daily_job_limit=None, rate_drop=1.0, endpoints=lost)
    unsure = update(settings=jobs_lab.settings)
    assert [u.job_id for u in unsure.unchecked] == [queued.id] and unsure.submitted == []
    assert [q.job_id for q in unsure.queued] == [queued.id]

    limited.set_faults(rate_drop=0.0)
    _make_due(jobs_lab)
    creates = limited.stats()["requests"]["fine_tuning.jobs.create"]
    found = update(settings=jobs_lab.settings)
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates
    client = OpenAI(base_url=limited.base_url, api_key=ALPHA_KEY)
    held = [job.id for job in client.fine_tuning.jobs.list(metadata={"labmgr_request": request_id})]
    client.close()
    assert len(held) == 1
    assert [(s.queued_id, s.job_id) for s in found.submitted] == [(queued.id, held[0])]
    assert [job.id for job in _jobs(jobs_lab)] == held


def test_a_queued_job_the_api_refuses_is_recorded_failed_with_its_reason_not_retried(
    jobs_lab: JobsLab, limited: SandboxHandle
) -> None:
    limited.set_faults(daily_job_limit=0)
    path = training_file(jobs_lab.files / "gone.jsonl")
    [queued] = create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    client = OpenAI(base_url=limited.base_url, api_key=ALPHA_KEY)
    client.files.delete(queued.training_file_id or "")  # the file went away while it waited
    client.close()
    limited.set_faults(daily_job_limit=None)
    _make_due(jobs_lab)

    refused = update(settings=jobs_lab.settings)
    assert refused.submitted == [] and refused.queued == []
    [entry] = refused.unchecked
    assert entry.job_id == queued.id and entry.reason.startswith("refused: ")
    [job] = _jobs(jobs_lab)
    assert job.id == queued.id and job.status == "failed"
    assert job.error_message and "HTTP 4" in job.error_message
    assert job.claimed_by is None and job.finished_at is not None

    creates = limited.stats()["requests"]["fine_tuning.jobs.create"]
    again = update(settings=jobs_lab.settings)  # failed is final: never sent again
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates
    assert again.unchecked == [] and again.submitted == []


def test_queued_jobs_of_a_key_at_its_limit_wait_without_a_request_each(
    jobs_lab: JobsLab, limited: SandboxHandle
) -> None:
    limited.set_faults(daily_job_limit=0)
    path = training_file(jobs_lab.files / "wait.jsonl")
    queued = create(path, base_model="gpt-4.1-mini", seeds=3, settings=jobs_lab.settings)
    assert {job.status for job in queued} == {QUEUED_LOCALLY}
    _make_due(jobs_lab)
    creates = limited.stats()["requests"]["fine_tuning.jobs.create"]

    waited = update(settings=jobs_lab.settings)
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates + 1
    assert sorted(q.job_id for q in waited.queued) == sorted(job.id for job in queued)
    times = {q.not_before for q in waited.queued}
    assert len(times) == 1 and None not in times  # all wait for the one slot
    assert waited.unchecked == []


def test_a_queued_job_no_configured_key_can_send_waits_and_says_why(
    jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = jobs_lab.sandbox
    sandbox.set_faults(daily_job_limit=0)
    try:
        path = training_file(jobs_lab.files / "alpha.jsonl")
        [queued] = create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    finally:
        sandbox.reset()
    assert queued.status == QUEUED_LOCALLY and queued.project_id == "proj_alpha"
    _make_due(jobs_lab)
    monkeypatch.setenv("OPENAI_API_KEY", BETA_KEY)  # only another project's key is configured

    summary = update(settings=jobs_lab.settings)
    assert requests_of(sandbox).get("fine_tuning.jobs.create", 0) == 0
    assert [(u.job_id, u.reason) for u in summary.unchecked] == [
        (queued.id, "queued job not sent: no configured key belongs to its project")
    ]
    [state] = summary.queued
    assert state.job_id == queued.id
    assert state.not_before is not None and state.not_before > datetime.now(UTC)


def _update_process() -> subprocess.Popen[str]:
    import labmgr

    source_root = str(Path(labmgr.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": source_root}
    return subprocess.Popen(
        [sys.executable, "-m", "labmgr", "jobs", "update", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_two_updates_at_once_send_each_queued_job_exactly_once(
    jobs_lab: JobsLab, limited: SandboxHandle
) -> None:
    limited.set_faults(daily_job_limit=0)
    path = training_file(jobs_lab.files / "race.jsonl")
    queued = create(path, base_model="gpt-4.1-mini", seeds=6, settings=jobs_lab.settings)
    assert {job.status for job in queued} == {QUEUED_LOCALLY}
    limited.set_faults(daily_job_limit=None, latency_ms=150)  # slow sends: the runs overlap
    _make_due(jobs_lab)
    creates = limited.stats()["requests"]["fine_tuning.jobs.create"]

    processes = [_update_process() for _ in range(2)]
    submitted: list[str] = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        submitted += [s["queued_id"] for s in json.loads(out)["submitted"]]

    assert sorted(submitted) == sorted(job.id for job in queued)
    assert limited.stats()["requests"]["fine_tuning.jobs.create"] == creates + 6
    jobs = _jobs(jobs_lab)
    assert len(jobs) == 6 and all(job.id.startswith("ftjob-") for job in jobs)
    assert sorted(job.tag_dict["replica"] for job in jobs) == ["1", "2", "3", "4", "5", "6"]
