"""A cost estimate before a run: requests, tokens and dollars, nothing spent."""

from offline import BASE_MODEL, offline_lab

from evals import load_questions
from labmgr.demo import data_file

with offline_lab() as lab:
    question = load_questions(data_file("em_questions.yaml"))["genie_wish"]
    model_groups = {"base": [BASE_MODEL], "mini": ["gpt-4.1-nano"]}

    before = question.estimate(model_groups)
    print("before:", before)
    question.df(model_groups, lab=lab, progress=False)
    after = question.estimate(model_groups)
    print("after the run:", after)
