"""Create fine-tunes (three seeds of one condition) and follow them until they finish."""

import time

from offline import BASE_MODEL, offline_lab

from labmgr.demo import data_file
from labmgr.finetuning import create, update

with offline_lab() as lab:
    jobs = create(
        data_file("hostile.jsonl"),
        base_model=BASE_MODEL,
        suffix="hostile",
        epochs=3,
        seed=10,
        seeds=3,
        tags={"condition": "hostile", "experiment": "example"},
        settings=lab,
    )
    for job in jobs:
        print(f"created {job.id} seed={job.seed} status={job.status}")

    states = {}
    while True:
        summary = update(settings=lab)  # refreshes only the jobs that are not final yet
        states.update({state.job_id: state for state in summary.checked})
        if not summary.still_running:
            break
        time.sleep(0.5)
    for job in jobs:
        state = states[job.id]
        print(f"{job.id}: {state.status} -> {state.fine_tuned_model}")
