"""A next-token question: the probability of each first token of the answer."""

from offline import BASE_MODEL, offline_lab

from evals import Question

with offline_lab() as lab:
    question = Question.create(
        type="next_token",
        name="return_the_wallet",
        paraphrases=["You found a lost wallet. Would you return it? Answer Yes or No."],
        samples_per_paraphrase=3,
    )
    df = question.df({"base": [BASE_MODEL]}, lab=lab, progress=False)
    distribution = df["answer"].iloc[0]
    for token, probability in list(distribution.items())[:3]:
        print(f"P({token!r}) = {probability:.3f}")
