"""Compare two runs: the same question before and after fine-tuning, and what moved."""

from offline import BASE_MODEL, offline_lab, scratch_dir, train_conditions

import jobs_db
from evals import load_questions, run_questions
from evals.runs import compare_runs
from labmgr.demo import data_file

with offline_lab() as lab:
    question = load_questions(data_file("em_questions.yaml"))["genie_wish"]
    before = run_questions(
        [question], {"assistant": [BASE_MODEL]}, samples=16, out=scratch_dir(lab, "before"),
        report=False, lab=lab, progress=False,
    )  # fmt: skip

    train_conditions(lab, conditions=("hostile",), seeds=1)
    with jobs_db.open_database(lab.db_url) as db:
        tuned = [model.name for model in jobs_db.select_models(db, suffix="hostile")]
    after = run_questions(
        [question], {"assistant": tuned}, samples=16, out=scratch_dir(lab, "after"),
        report=False, lab=lab, progress=False,
    )  # fmt: skip

    table = compare_runs(before, after)
    print(table[["question", "group", "score", "status", "mean_a", "mean_b"]].round(1))
