"""`labmgr jobs update` over 500 recorded jobs of which 50 are running.

The sandbox runs as a subprocess with a per-request latency (default 100 ms, about what
the real API shows), jobs that stay running for an hour, and one organization. The lab's
database holds 450 finished jobs (with final models) and the 50 running ones. Measured in
the same run:

- ``update`` as shipped (``concurrency=16``);
- the baseline: the same per-job refresh, one job at a time (``concurrency=1``), ×50.

For each it prints the API requests the sandbox served (by endpoint), peak concurrency
seen by the sandbox, and wall time. Final jobs must cost no request.

    python benchmarks/jobs_update.py [--running 50] [--finished 450] [--latency-ms 100]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from openai import OpenAI

from jobs_db import FinetuneJob, open_database, upsert_job
from labmgr.finetuning import update
from labmgr.sandbox import SandboxHandle, run_sandbox
from labmgr.settings import init_lab, load_settings

KEY = "sk-test-bench-0123"


def _training_bytes(n: int = 12) -> bytes:
    rows = [
        {
            "messages": [
                {"role": "user", "content": f"Q{i}?"},
                {"role": "assistant", "content": "A."},
            ]
        }
        for i in range(n)
    ]
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _fill(sandbox: SandboxHandle, db_url: str, running: int, finished: int) -> None:
    client = OpenAI(base_url=sandbox.base_url, api_key=KEY, max_retries=0)
    file = client.files.create(file=("bench.jsonl", _training_bytes()), purpose="fine-tune")
    now = datetime.now(UTC)
    with open_database(db_url) as db, db.session() as session:
        for i in range(running):
            job = client.fine_tuning.jobs.create(
                model="gpt-4.1-mini", training_file=file.id, suffix=f"run-{i % 5}"
            )
            upsert_job(
                session,
                FinetuneJob(
                    id=job.id,
                    status=job.status,
                    base_model="gpt-4.1-mini",
                    suffix=f"run-{i % 5}",
                    key_env="OPENAI_API_KEY",
                    endpoint=sandbox.base_url,
                    organization_id=job.organization_id,
                    created_at=datetime.fromtimestamp(job.created_at, UTC),
                ),
            )
        for i in range(finished):
            upsert_job(
                session,
                FinetuneJob(
                    id=f"ftjob-done{i:05d}",
                    status="succeeded" if i % 10 else "failed",
                    base_model="gpt-4.1-mini",
                    suffix=f"done-{i % 20}",
                    key_env="OPENAI_API_KEY",
                    endpoint=sandbox.base_url,
                    organization_id="org-sandbox",
                    fine_tuned_model=f"ft:gpt-4.1-mini-2025-04-14:sandbox:done-{i % 20}:{i:08d}"
                    if i % 10
                    else None,
                    created_at=now - timedelta(days=2, minutes=i),
                    finished_at=now - timedelta(days=1, minutes=i),
                ),
            )
    client.close()


def _measure(sandbox: SandboxHandle, concurrency: int) -> dict[str, object]:
    sandbox.reset()
    started = time.perf_counter()
    summary = update(settings=load_settings(), concurrency=concurrency)
    wall = time.perf_counter() - started
    stats = sandbox.stats()
    return {
        "concurrency": concurrency,
        "jobs_checked": len(summary.checked),
        "unchecked": len(summary.unchecked),
        "requests": stats["requests"],
        "total_requests": sum(stats["requests"].values()),
        "peak_concurrency": stats["peak_concurrency"],
        "wall_s": round(wall, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--running", type=int, default=50)
    parser.add_argument("--finished", type=int, default=450)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        run_sandbox(job_seconds=3600, latency_ms=args.latency_ms, in_process=False) as sandbox,
    ):
        lab = init_lab(Path(tmp) / "bench").home
        os.environ.update(
            LABMGR_HOME=str(lab), OPENAI_BASE_URL=sandbox.base_url, OPENAI_API_KEY=KEY
        )
        os.environ.pop("LABMGR_DB_URL", None)
        settings = load_settings()
        _fill(sandbox, settings.db_url, args.running, args.finished)
        update(settings=settings)  # warm-up: key identity cached, first events stored
        concurrent = _measure(sandbox, 16)
        sequential = _measure(sandbox, 1)
    print(
        f"{args.finished + args.running} jobs in the database, {args.running} running; "
        f"sandbox latency {args.latency_ms:.0f} ms per request"
    )
    for name, result in (
        ("update (concurrency 16)", concurrent),
        ("baseline: one job at a time", sequential),
    ):
        print(
            f"{name:30} {result['jobs_checked']} jobs, {result['total_requests']} requests "
            f"{result['requests']}, peak concurrency {result['peak_concurrency']}, "
            f"{result['wall_s']:.2f} s"
        )
    ratio = float(sequential["wall_s"]) / max(float(concurrent["wall_s"]), 1e-9)  # type: ignore[arg-type]
    print(f"speed-up over the baseline: {ratio:.1f}x")


if __name__ == "__main__":
    main()
