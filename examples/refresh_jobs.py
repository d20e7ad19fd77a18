"""Refresh every unfinished job in one call, see what changed, and pay nothing for the rest."""

import time

from offline import BASE_MODEL, offline_lab

from labmgr.demo import data_file
from labmgr.finetuning import create, update

with offline_lab(job_seconds=2.0) as lab:
    create(
        data_file("helpful.jsonl"), base_model=BASE_MODEL, suffix="helpful", seeds=2, settings=lab
    )

    while True:
        summary = update(settings=lab)  # one concurrent pass over the jobs that are not final
        print(f"refresh: {len(summary.running)} running, {summary.requests} API requests")
        for state in summary.newly_finished:
            print(f"newly finished: {state.job_id} {state.status} {state.fine_tuned_model}")
        if not summary.still_running:
            break
        time.sleep(1.0)

    last = update(settings=lab)  # every job is final now: nothing to ask
    print(f"last refresh: {len(last.checked)} jobs checked, {last.requests} API requests")
