"""What the sandbox's job-timeline memory saves a client that polls a long fine-tuning job.

A job's timeline (every status, event, metric step and checkpoint of its life) is laid out
from its record and actions. The sandbox keeps each job's timeline until an action (pause,
resume, cancel) changes it. This script polls one large job as `labmgr jobs update` does
(retrieve, events, checkpoints) through the official SDK against an in-process sandbox, with
the memory and with the timeline laid out again on every request (the baseline, measured in
the same run, alternating), and prints the median time per poll and their ratio.

    python benchmarks/job_timeline.py [--examples 10000] [--epochs 10] [--polls 20]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai

from labmgr.sandbox import finetuning, run_sandbox
from labmgr.sandbox.job_timeline import build_timeline

KEY = "sk-bench-timeline"


@contextmanager
def _without_memory() -> Iterator[None]:
    """Every request lays the timeline out again (what the sandbox did without its memory)."""
    kept = finetuning._timeline

    def again(sb: Any, job: dict[str, Any]) -> Any:
        return build_timeline(job)

    finetuning._timeline = again  # type: ignore[assignment]
    try:
        yield
    finally:
        finetuning._timeline = kept  # type: ignore[assignment]


def _training_file(examples: int) -> bytes:
    line = {
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    }
    return ("\n".join(json.dumps(line) for _ in range(examples)) + "\n").encode()


def _poll(client: openai.OpenAI, job_id: str) -> float:
    started = time.perf_counter()
    client.fine_tuning.jobs.retrieve(job_id)
    client.fine_tuning.jobs.list_events(job_id, limit=100)
    client.fine_tuning.jobs.checkpoints.list(job_id)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--polls", type=int, default=20, help="Polls per round (3 rounds each).")
    args = parser.parse_args()
    with run_sandbox(job_seconds=3600) as sandbox:
        client = openai.OpenAI(base_url=sandbox.base_url, api_key=KEY, max_retries=0)
        upload = client.files.create(
            file=("train.jsonl", io.BytesIO(_training_file(args.examples))), purpose="fine-tune"
        )
        job = client.fine_tuning.jobs.create(
            model="gpt-4o-mini-2024-07-18",
            training_file=upload.id,
            hyperparameters={"n_epochs": args.epochs, "batch_size": 1},
        )
        _poll(client, job.id)  # the first poll lays the timeline out in both cases
        times: dict[str, list[float]] = {"with memory": [], "laid out each request": []}
        for _ in range(3):
            times["with memory"] += [_poll(client, job.id) for _ in range(args.polls)]
            with _without_memory():
                times["laid out each request"] += [_poll(client, job.id) for _ in range(args.polls)]
    steps = args.examples * args.epochs
    print(f"one job of {args.examples} examples x {args.epochs} epochs, batch 1 ({steps} steps)")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"{name:24s} median per poll {median * 1000:8.1f} ms  (of {len(times[name])})")
    ratio = medians["laid out each request"] / medians["with memory"]
    print(f"the memory makes a poll {ratio:.1f}x faster")


if __name__ == "__main__":
    main()
