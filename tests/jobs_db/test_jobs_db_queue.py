"""The local queue of jobs waiting for a daily slot: claims, leases, promotion, on SQLite
and PostgreSQL, and several processes claiming at once."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from jobs_db import (
    QUEUED_LOCALLY,
    Database,
    FinetuneJob,
    cancel_queued_job,
    claim_queued_job,
    get_job,
    list_jobs,
    non_final_jobs,
    open_database,
    promote_queued_job,
    queued_jobs,
    release_queued_job,
    upsert_job,
)

WORKER = Path(__file__).with_name("db_worker.py")
REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=10)


def _queue(db: Database, name: str, *, minutes_ago: int, not_before: datetime | None = None):
    upsert_job(
        db,
        FinetuneJob(
            id=f"queued-{name}",
            status=QUEUED_LOCALLY,
            suffix=name,
            base_model="gpt-4.1-mini",
            key_env="OPENAI_API_KEY",
            training_file_id="file-train",
            hyperparameters_requested={"n_epochs": 3},
            api_metadata={"labmgr_request": f"req-{name}"},
            create_request={"model": "gpt-4.1-mini", "training_file": "file-train"},
            created_at=NOW - timedelta(minutes=minutes_ago),
            not_before=not_before,
        ),
        tags={"condition": name, "seed": "1"},
    )


def test_the_oldest_due_job_is_claimed_once_until_its_lease_lapses(database: Database) -> None:
    _queue(database, "later", minutes_ago=5, not_before=NOW + timedelta(hours=1))
    _queue(database, "second", minutes_ago=10)
    _queue(database, "first", minutes_ago=20, not_before=NOW - timedelta(minutes=1))

    first = claim_queued_job(database, owner="a", now=NOW, lease=LEASE)
    second = claim_queued_job(database, owner="b", now=NOW, lease=LEASE)
    assert first is not None and second is not None
    assert (first.job.id, second.job.id) == ("queued-first", "queued-second")
    assert first.previous_owner is None and first.job.submit_attempts == 1
    assert first.job.claimed_by == "a" and first.job.claimed_until == NOW + LEASE
    # Nothing else is due: "later" waits for its slot, the others are held.
    assert claim_queued_job(database, owner="c", now=NOW, lease=LEASE) is None

    # Holder "a" crashed: after its lease another process gets the job, and is told.
    lapsed = NOW + LEASE + timedelta(seconds=1)
    again = claim_queued_job(database, owner="c", now=lapsed, lease=LEASE)
    assert again is not None and again.job.id == "queued-first"
    assert again.previous_owner == "a" and again.job.submit_attempts == 2


def test_a_released_job_waits_for_its_new_time_and_forgets_the_claim(database: Database) -> None:
    _queue(database, "refused", minutes_ago=1)
    claim = claim_queued_job(database, owner="a", now=NOW, lease=LEASE)
    assert claim is not None
    later = NOW + timedelta(hours=3)
    assert not release_queued_job(database, claim.job.id, owner="b", not_before=later)
    assert release_queued_job(
        database, claim.job.id, owner="a", not_before=later, phase="waiting for a slot"
    )
    stored = get_job(database, claim.job.id)
    assert stored is not None
    assert (stored.claimed_by, stored.claimed_until, stored.not_before) == (None, None, later)
    assert stored.phase == "waiting for a slot"
    assert claim_queued_job(database, owner="a", now=NOW, lease=LEASE) is None
    reclaimed = claim_queued_job(database, owner="b", now=later, lease=LEASE)
    assert reclaimed is not None and reclaimed.previous_owner is None


def test_promotion_replaces_the_queued_row_with_the_api_job_keeping_tags(
    database: Database,
) -> None:
    _queue(database, "insecure", minutes_ago=1)
    claim = claim_queued_job(database, owner="a", now=NOW, lease=LEASE)
    assert claim is not None
    api_job = FinetuneJob(
        id="ftjob-real", status="validating_files", created_at=NOW, organization_id="org-a"
    )
    assert not promote_queued_job(database, "queued-insecure", api_job, owner="someone-else")
    assert get_job(database, "ftjob-real") is None

    assert promote_queued_job(database, "queued-insecure", api_job, owner="a")
    assert get_job(database, "queued-insecure") is None
    real = get_job(database, "ftjob-real")
    assert real is not None
    assert real.tag_dict == {"condition": "insecure", "seed": "1"}
    assert (real.suffix, real.base_model, real.key_env) == (
        "insecure",
        "gpt-4.1-mini",
        "OPENAI_API_KEY",
    )
    assert real.hyperparameters_requested == {"n_epochs": 3}
    assert real.create_request == {"model": "gpt-4.1-mini", "training_file": "file-train"}
    assert (real.status, real.organization_id, real.claimed_by) == (
        "validating_files",
        "org-a",
        None,
    )
    assert queued_jobs(database) == []
    assert [job.id for job in non_final_jobs(database)] == ["ftjob-real"]


def test_queued_jobs_are_not_api_jobs_to_refresh(database: Database) -> None:
    _queue(database, "waiting", minutes_ago=1)
    upsert_job(database, FinetuneJob(id="ftjob-running", status="running"))
    assert [job.id for job in non_final_jobs(database)] == ["ftjob-running"]
    assert [job.id for job in queued_jobs(database)] == ["queued-waiting"]
    assert {job.status for job in list_jobs(database, status=QUEUED_LOCALLY)} == {QUEUED_LOCALLY}


def test_a_queued_job_is_cancelled_unless_someone_is_submitting_it(database: Database) -> None:
    _queue(database, "held", minutes_ago=2)
    _queue(database, "idle", minutes_ago=1)
    claim = claim_queued_job(database, owner="a", now=NOW, lease=LEASE)
    assert claim is not None and claim.job.id == "queued-held"
    assert not cancel_queued_job(database, "queued-held", now=NOW)
    assert cancel_queued_job(database, "queued-idle", now=NOW)
    idle = get_job(database, "queued-idle")
    assert idle is not None and (idle.status, idle.finished_at) == ("cancelled", NOW)
    assert not cancel_queued_job(database, "queued-idle", now=NOW)  # already final
    assert [job.id for job in queued_jobs(database)] == ["queued-held"]


def _claimer(url: str, name: str, go: Path) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    process = subprocess.Popen(
        [sys.executable, str(WORKER), "claim", url, name, str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise AssertionError(f"claim worker failed: {process.communicate(timeout=30)[1]}")
    return process


def test_three_processes_claiming_at_once_submit_each_job_exactly_once(
    db_url: str, tmp_path: Path
) -> None:
    with open_database(db_url) as db:
        for index in range(30):
            _queue(db, f"{index:02d}", minutes_ago=60 - index)
    go = tmp_path / "go"
    workers = [_claimer(db_url, name, go) for name in ("a", "b", "c")]
    go.touch()
    claimed: list[str] = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        claimed += out.split()
    assert sorted(claimed) == [f"queued-{index:02d}" for index in range(30)]
    with open_database(db_url) as db:
        assert queued_jobs(db) == []
        promoted = list_jobs(db)
        assert len(promoted) == 30 and all(job.id.startswith("ftjob-from-") for job in promoted)
        assert all(job.tag_dict["seed"] == "1" for job in promoted)
