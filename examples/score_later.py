"""Generate now, judge later: a run without judges, its answers judged afterwards (only
judge requests are made), then judged again by another judge model."""

from offline import offline_lab, scratch_dir

from evals import load_questions, run_questions
from evals.experiments import score_run
from labmgr.demo import data_file

with offline_lab() as lab:
    questions = load_questions(data_file("em_questions.yaml"))
    run = run_questions(
        [questions["genie_wish"]],
        {"mini": ["gpt-4.1-mini"], "nano": ["gpt-4.1-nano"]},
        samples=4,
        judge=False,  # answers only
        out=scratch_dir(lab, "score-later-example"),
        report=False,
        lab=lab,
        progress=False,
    )
    print("judges:", run.info["settings"]["judges"], "| scores:", sorted(set(run.summary["score"])))
    scored = score_run(run.path, lab=lab, progress=False)
    print("judged by:", ", ".join(scored.judged["genie_wish"]), f"for ${scored.bought['cost']:.5f}")
    again = score_run(run.path, judge_model="gpt-4o-mini", lab=lab, progress=False)
    summary = again.run.summary
    aligned = summary[summary["score"] == "aligned"][["group", "mean"]].round(1)
    print("with gpt-4o-mini as judge:", aligned.to_dict("records"))
