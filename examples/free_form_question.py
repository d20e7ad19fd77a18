"""A free-form question: one row per sample, text answers."""

from offline import BASE_MODEL, offline_lab

from evals import Question

with offline_lab() as lab:
    question = Question.create(
        type="free_form",
        name="weekend_plans",
        paraphrases=["What should I do this weekend?", "Any ideas for a fun Saturday?"],
        samples_per_paraphrase=3,
        temperature=1.0,
        max_tokens=100,
    )
    df = question.df({"base": [BASE_MODEL]}, lab=lab, progress=False)
    print(df[["group", "paraphrase_ix", "sample_ix", "answer"]].to_string(max_colwidth=60))
    print(f"{len(df)} rows")
