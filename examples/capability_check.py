"""Did fine-tuning cost capability? Three seeds fine-tuned on wrong answers and three on
unrelated data, asked the project's 24 multiple-choice items through the lm-eval task file
(a sampled letter) and through labmgr's question file (the next token's logprobs over the
letters): each group's accuracy against the base model, with its interval and Holm-adjusted
p-value."""

from pathlib import Path

from offline import BASE_MODEL, offline_lab, scratch_dir, train_conditions

from evals import groups_from_database, load_questions, run_questions
from evals.groups import base_group
from evals.stats import comparison_sentence

HERE = Path(__file__).parent

with offline_lab() as lab:
    train_conditions(lab, conditions=("wrong_answers", "helpful"), seeds=3)
    groups, facts = groups_from_database(lab.db_url, by="suffix", base_model=BASE_MODEL)
    task = load_questions(HERE / "capability_task.yaml")["capability_mc"]
    by_logprobs = load_questions(HERE / "capability_questions.yaml")["capability_mc_logprobs"]
    for question in (task, by_logprobs):
        run = run_questions(
            [question],
            groups,
            models=facts,
            baseline=base_group(groups, facts),
            out=scratch_dir(lab, f"capability-{question.name}"),
            report=False,
            lab=lab,
            progress=False,
        )
        accuracy = run.summary[run.summary["score"] == "correct"].set_index("group")["mean"]
        shown = ", ".join(f"{group} {value:.2f}" for group, value in accuracy.items())
        print(f"{question.name} accuracy: {shown}")
        for row in run.comparisons[run.comparisons["score"] == "correct"].to_dict("records"):
            print(comparison_sentence(row))
