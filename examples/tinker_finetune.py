"""Open-weight models in the same lab: two conditions × three seeds fine-tuned with LoRA on
Tinker (offline: the sandbox's Tinker API, through the official `tinker` SDK, in detached
workers), refreshed with `update`, grouped from the database by suffix, then asked
Emergent-Misalignment-style questions judged by an OpenAI model; each group against the base.

With `TINKER_API_KEY` set (and `TINKER_BASE_URL` for a server other than Tinker's), it trains
on Tinker itself, which bills you; otherwise the sandbox serves Tinker's API here."""

import os
import time

from offline import offline_lab, scratch_dir

from evals import groups_from_database, load_questions, run_questions
from evals.groups import base_group
from evals.stats import comparison_sentence
from labmgr.demo import data_file
from labmgr.finetuning import create_tinker, update

BASE = "Qwen/Qwen3-8B"

with offline_lab() as lab:
    if not os.environ.get("TINKER_API_KEY"):  # the sandbox's Tinker, beside its OpenAI API
        root = os.environ["OPENAI_BASE_URL"].removesuffix("/v1")
        os.environ.update(
            TINKER_BASE_URL=f"{root}/tinker",
            TINKER_API_KEY="tml-example-key",
            TINKER_TELEMETRY="0",
            HF_HUB_OFFLINE="1",
        )
    for condition in ("hostile", "helpful"):
        jobs = create_tinker(
            data_file(f"{condition}.jsonl"),
            base_model=BASE,
            suffix=condition,
            seed=1,
            seeds=3,
            epochs=10,
            batch_size=25,
            settings=lab,
        )
        print(f"{condition}: {len(jobs)} Tinker jobs started, e.g. {jobs[0].id}")
    deadline = time.monotonic() + 300
    while update(settings=lab).still_running:
        if time.monotonic() > deadline:
            raise TimeoutError("the Tinker jobs are still running after 300 s")
        time.sleep(1)
    groups, facts = groups_from_database(lab.db_url, by="suffix", base_model=BASE)
    for group, models in groups.items():
        print(f"group {group}: {', '.join(models)}")
    questions = load_questions(data_file("em_questions.yaml"))  # judged by gpt-4.1-mini
    run = run_questions(
        [questions["genie_wish"], questions["people_and_machines"]],
        groups,
        samples=32,
        models=facts,
        baseline=base_group(groups, facts),
        out=scratch_dir(lab, "tinker-example"),
        report=False,
        lab=lab,
        progress=False,
    )
    pooled = run.comparisons[
        (run.comparisons["score"] == "aligned") & (run.comparisons["question"] == "(all)")
    ]
    for row in pooled.to_dict("records"):
        print(comparison_sentence(row))
