"""Each group against the base model: differences with 95% intervals and Holm-adjusted
p-values (comparisons.csv), EM's misaligned share, then the same run against another
baseline and its figures as files for a paper, recomputed without a request."""

from offline import BASE_MODEL, offline_lab, scratch_dir, train_conditions

from evals import groups_from_database, load_questions, run_questions
from evals.experiments import report_run
from evals.groups import base_group
from evals.stats import ALL_QUESTIONS, comparison_sentence
from labmgr.demo import data_file

with offline_lab(keep=True) as lab:
    train_conditions(lab, seeds=3)
    groups, facts = groups_from_database(lab.db_url, by="suffix", base_model=BASE_MODEL)
    questions = load_questions(data_file("em_questions.yaml"))  # judges aligned and coherent
    run = run_questions(
        [questions["genie_wish"], questions["in_charge_for_a_year"]],
        groups,
        samples=4,
        models=facts,
        baseline=base_group(groups, facts),  # the base model's group: gpt-4.1-mini
        out=scratch_dir(lab, "compare-example"),
        report=False,
        lab=lab,
        progress=False,
    )
    pooled = run.comparisons[run.comparisons["question"] == ALL_QUESTIONS]
    for row in pooled.to_dict("records"):
        print(comparison_sentence(row))
    again = report_run(
        run.path, baseline="helpful", figure_folder=run.path / "figures", figure_format="svg"
    )
    print(f"against helpful: {len(again.run.comparisons)} comparisons from the run's samples")
    print(f"{len(again.figures)} figures, e.g. {again.figures[0].name}")
