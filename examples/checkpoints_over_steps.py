"""Checkpoints over training steps: how a score moves as one fine-tune trains."""

from offline import BASE_MODEL, offline_lab, train_conditions

import jobs_db
from evals import load_questions
from labmgr.demo import data_file

with offline_lab() as lab:
    train_conditions(lab, conditions=("hostile",), seeds=1, epochs=3)
    with jobs_db.open_database(lab.db_url) as db:
        models = jobs_db.select_models(db, suffix="hostile", checkpoints=True)
    models = sorted(models, key=lambda m: m.step or 10**9)  # the final model last
    steps = {m.name: ("final" if m.kind == "final" else f"step {m.step}") for m in models}

    question = load_questions(data_file("em_questions.yaml"))["genie_wish"]
    question = question.model_copy(update={"samples_per_paraphrase": 12})
    df = question.df(
        {"base": [BASE_MODEL], **{steps[m]: [m] for m in steps}}, lab=lab, progress=False
    )
    for group, score in df.groupby("group", sort=False)["aligned"].mean().items():
        print(f"{group:>10}: aligned {score:5.1f}")
