"""Several processes on one database: nothing lost, nothing half-written."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import create_engine, text

from jobs_db import (
    Database,
    FinetuneJob,
    current_revision,
    get_job,
    head_revision,
    list_jobs,
    open_database,
    select_models,
    upgrade,
    upsert_job,
)

WORKER = Path(__file__).with_name("db_worker.py")
REPO = Path(__file__).resolve().parents[2]


def _start(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_ready(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()
    if line.strip() != "ready":
        _, err = process.communicate(timeout=30)
        raise AssertionError(f"worker failed before starting: {line}{err}")


def test_two_processes_creating_and_writing_200_jobs_each_lose_nothing(
    db_url: str, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    workers = [_start("write", db_url, name, "200", str(go)) for name in ("a", "b")]
    for worker in workers:
        _wait_ready(worker)
    go.touch()
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        assert out.strip() == "done"

    assert current_revision(db_url) == head_revision()
    with open_database(db_url) as db:
        jobs = list_jobs(db, tags={"writer": "a"}) + list_jobs(db, tags={"writer": "b"})
        assert len({job.id for job in jobs}) == 400
        assert len(list_jobs(db)) == 401
        shared = get_job(db, "ftjob-shared")
        assert shared is not None
        assert (shared.phase, shared.trained_tokens) == ("a 199", 199)


def test_two_processes_upgrading_an_old_database_at_once_both_succeed(
    db_url: str, tmp_path: Path
) -> None:
    upgrade(db_url, to="0001")
    engine = create_engine(db_url)
    with engine.begin() as connection:
        for index in range(20):
            connection.execute(
                text("INSERT INTO finetune_jobs (id, status) VALUES (:id, 'queued')"),
                {"id": f"ftjob-{index}"},
            )
    engine.dispose()
    go = tmp_path / "go"
    workers = [_start("open", db_url, str(go)) for _ in range(2)]
    for worker in workers:
        _wait_ready(worker)
    go.touch()
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        assert out.strip() == "20"
    assert current_revision(db_url) == head_revision()


def test_killed_writer_leaves_the_database_consistent_and_unlocked(db_url: str) -> None:
    open_database(db_url).close()
    worker = _start("hold", db_url)
    try:
        _wait_ready(worker)
    finally:
        worker.kill()
        worker.communicate(timeout=30)

    with open_database(db_url) as db:
        assert get_job(db, "ftjob-interrupted") is None
        assert select_models(db, checkpoints=True) == []
        assert upsert_job(db, FinetuneJob(id="ftjob-after", status="queued"))  # no lock left behind
        assert [job.id for job in list_jobs(db)] == ["ftjob-after"]
    if db_url.startswith("sqlite"):
        engine = create_engine(db_url)
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        engine.dispose()


def test_threads_sharing_one_database_lose_nothing(database: Database) -> None:
    def write(index: int) -> bool:
        return upsert_job(database, FinetuneJob(id=f"ftjob-{index:03d}", status="queued"))

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(write, range(100)))
    assert len(list_jobs(database)) == 100
