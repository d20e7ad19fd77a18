"""Refresh every unfinished job in one call, and see what changed."""

from offline import BASE_MODEL, offline_lab

from labmgr.demo import data_file
from labmgr.finetuning import create, update

with offline_lab(job_seconds=2.0):
    create(data_file("helpful.jsonl"), base_model=BASE_MODEL, suffix="helpful", seeds=2)

    first = update()
    print(f"first refresh: {len(first.running)} running, {first.requests} API requests")

    import time

    time.sleep(2.5)
    second = update()
    for state in second.newly_finished:
        print(f"newly finished: {state.job_id} {state.status} {state.fine_tuned_model}")

    third = update()
    print(f"third refresh: {len(third.checked)} jobs checked, {third.requests} API requests")
