"""Cost against score: three models on the same questions, each one's cost per 1,000
samples (answers and judges apart) beside its mean score — per question in the summary, over
the questions in costs.csv — and the figure for choosing."""

from offline import offline_lab, scratch_dir

from evals import load_questions, run_questions
from evals.plots import cost_figure
from labmgr.demo import data_file

with offline_lab() as lab:
    questions = load_questions(data_file("em_questions.yaml"))
    run = run_questions(
        [questions["genie_wish"], questions["in_charge_for_a_year"]],
        {"gpt-4.1": ["gpt-4.1"], "gpt-4.1-mini": ["gpt-4.1-mini"], "nano": ["gpt-4.1-nano"]},
        samples=4,
        out=scratch_dir(lab, "cost-example"),
        report=False,
        lab=lab,
        progress=False,
    )
    summary = run.summary
    wish = summary[(summary["question"] == "genie_wish") & (summary["score"] == "aligned")]
    for row in wish.to_dict("records"):
        print(
            f"genie_wish, {row['group']}: aligned {row['mean']:.1f} at "
            f"${row['answer_cost_per_1k']:.4f} per 1,000 answers "
            f"(+ ${row['judge_cost_per_1k']:.4f} judging)"
        )
    costs = run.costs()
    rows = costs[(costs["level"] == "group") & (costs["score"] == "aligned")]
    for row in rows.to_dict("records"):
        print(
            f"{row['group']}: ${row['answer_cost_per_1k']:.4f} per 1,000 answers "
            f"(+ ${row['judge_cost_per_1k']:.4f} judging), aligned {row['mean']:.1f} "
            f"[{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
        )
    figure = run.path / "aligned-against-cost.png"
    cost_figure(costs, "aligned").savefig(figure)
    print("figure:", figure.name)
