"""A run folder and its offline HTML report."""

from offline import BASE_MODEL, offline_lab, scratch_dir, train_conditions

from evals import groups_from_database, load_questions, run_questions
from labmgr.demo import data_file

with offline_lab(keep=True) as lab:
    train_conditions(lab, seeds=2)
    groups, facts = groups_from_database(
        lab.db_url, by="suffix", base_model=BASE_MODEL, include_base=True
    )
    questions = load_questions(data_file("em_questions.yaml"))
    run = run_questions(
        [questions["genie_wish"], questions["in_charge_for_a_year"]],
        groups,
        samples=3,
        models=facts,
        out=scratch_dir(lab, "report-example"),
        lab=lab,
        progress=False,
    )
    print(run.summary[["question", "group", "score", "mean", "ci_low", "ci_high"]].round(1))
    print("report:", run.path / "report.html")
