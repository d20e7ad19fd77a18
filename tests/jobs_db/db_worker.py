"""A separate process writing to a jobs database, for the concurrency tests.

python db_worker.py write URL NAME COUNT GO_FILE   # open, wait for GO_FILE, write COUNT jobs
python db_worker.py hold URL                       # write inside a transaction, never commit
python db_worker.py claim URL NAME GO_FILE         # claim queued jobs until none is left
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from jobs_db import (
    FinetuneJob,
    Model,
    claim_queued_job,
    open_database,
    promote_queued_job,
    replace_checkpoints,
    upsert_job,
)


def wait_for(go_file: Path) -> None:
    deadline = time.monotonic() + 60
    while not go_file.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the test never said go")
        time.sleep(0.005)


def write(url: str, name: str, count: int, go_file: Path) -> None:
    db = open_database(url)  # both processes may create and migrate the database at once
    print("ready", flush=True)
    wait_for(go_file)
    for index in range(count):
        upsert_job(
            db,
            FinetuneJob(
                id=f"ftjob-{name}-{index:03d}",
                status="queued",
                suffix=f"{name}-{index}",
                created_at=datetime.now(UTC),
            ),
            tags={"writer": name},
        )
        if index % 5 == 4:  # both writers also update one shared job, each its own field
            shared = {"phase": f"{name} {index}"} if name == "a" else {"trained_tokens": index}
            upsert_job(db, FinetuneJob(id="ftjob-shared", status="running", **shared))
    db.close()
    print("done", flush=True)


def hold(url: str) -> None:
    db = open_database(url)
    with db.session() as session:
        upsert_job(
            session,
            FinetuneJob(
                id="ftjob-interrupted", status="succeeded", fine_tuned_model="ft:interrupted"
            ),
        )
        replace_checkpoints(session, "ftjob-interrupted", [Model(name="ft:ck", step=1)])
        session.flush()
        print("ready", flush=True)
        time.sleep(120)  # killed here, before the transaction commits


def open_when_told(url: str, go_file: Path) -> None:
    import jobs_db  # imported before the signal, so both processes start migrating together

    print("ready", flush=True)
    wait_for(go_file)
    with jobs_db.open_database(url) as db:
        print(len(jobs_db.list_jobs(db)), flush=True)


def claim(url: str, name: str, go_file: Path) -> None:
    """Claim and promote queued jobs until none is left; print each queued id it got."""
    db = open_database(url)
    print("ready", flush=True)
    wait_for(go_file)
    while True:
        got = claim_queued_job(db, owner=name, now=datetime.now(UTC), lease=timedelta(minutes=10))
        if got is None:
            break
        promoted = FinetuneJob(id=f"ftjob-from-{got.job.id}", status="validating_files")
        assert promote_queued_job(db, got.job.id, promoted, owner=name)
        print(got.job.id, flush=True)
    db.close()


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5]))
    elif sys.argv[1] == "claim":
        claim(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
    elif sys.argv[1] == "open":
        open_when_told(sys.argv[2], Path(sys.argv[3]))
    else:
        hold(sys.argv[2])
