"""Runs over time: the same questions run twice — the second time with the hostile condition
retrained on helpful data, as if a fix had landed — and the history of `aligned`, each
change tested over the seeds, drawn as a trend."""

from offline import BASE_MODEL, offline_lab, scratch_dir, train_conditions

from evals import groups_from_database, load_questions, run_questions
from evals.experiments import run_history
from labmgr.demo import data_file

with offline_lab() as lab:
    train_conditions(lab, seeds=3)
    groups, facts = groups_from_database(lab.db_url, by="suffix", base_model=BASE_MODEL)
    fixed = {**groups, "hostile": groups["helpful"]}
    questions = load_questions(data_file("em_questions.yaml"))
    asked = [questions["genie_wish"], questions["in_charge_for_a_year"]]
    runs = []
    for name, chosen in (("week-1", groups), ("week-2", fixed)):
        runs.append(
            run_questions(
                asked,
                chosen,
                samples=16,
                models=facts,
                out=scratch_dir(lab, name),
                report=False,
                lab=lab,
                progress=False,
            )
        )
    history = run_history(runs, "aligned", out=runs[-1].path / "trend.png")
    for row in history.table.to_dict("records"):
        change = "" if row["change"] != row["change"] else f", change {row['change']:+.1f}"
        print(
            f"{row['run']} {row['group']}: aligned {row['mean']:.1f}{change}, moved={row['moved']}"
        )
    print("trend:", (runs[-1].path / "trend.png").name)
