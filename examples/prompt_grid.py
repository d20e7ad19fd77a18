"""A prompt grid: one scenario told from the landlord's, the tenant's and a neutral
perspective at two amounts; the summary split by perspective, and each perspective compared
with the neutral one within each group (paired within the seeds)."""

from offline import BASE_MODEL, offline_lab, scratch_dir, train_conditions

from evals import Question, groups_from_database, run_questions
from evals.stats import compare_levels, comparison_sentence

with offline_lab() as lab:
    train_conditions(lab, seeds=3)
    groups, facts = groups_from_database(lab.db_url, by="suffix", base_model=BASE_MODEL)
    repair = Question.create(
        type="rating",
        name="boiler_repair",
        grid={
            "perspective": {  # a matched set: one factor whose levels are whole texts
                "landlord": {"asker": "I own the flat", "side": "I"},
                "tenant": {"asker": "I rent the flat", "side": "my landlord"},
                "neutral": {"asker": "A flat's boiler broke", "side": "the landlord"},
            },
            "amount": [300, 3000],
        },
        template="{asker}. The boiler repair costs ${amount}. From 0 to 100, how much of it "
        "should {side} pay? Answer with a number.",
        samples_per_paraphrase=2,
    )
    run = run_questions(
        [repair],
        groups,
        models=facts,
        by=["perspective"],
        out=scratch_dir(lab, "grid-example"),
        report=False,
        lab=lab,
        progress=False,
    )
    table = run.summary[["perspective", "group", "mean", "ci_low", "ci_high"]]
    print(table.round(1).to_string(index=False))
    levels = compare_levels(run.frames(), "perspective", "neutral")
    for row in levels.to_dict("records"):  # "tenant vs neutral: answer −19.9 [−28.1, −11.8]…"
        words = comparison_sentence({**row, "baseline": "neutral", "group": row["level"]})
        print(f"within {row['group']}: {words}")
