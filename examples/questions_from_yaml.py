"""Questions from YAML: llmcomp's dialect and the Emergent Misalignment one."""

from offline import BASE_MODEL, offline_lab

from evals import load_questions
from labmgr.demo import data_file

with offline_lab() as lab:
    em = load_questions(data_file("em_questions.yaml"))
    llmcomp = load_questions(data_file("llmcomp_questions.yaml"))
    print("EM dialect:", ", ".join(em))
    print("llmcomp dialect:", ", ".join(f"{n} ({q.type_name})" for n, q in llmcomp.items()))

    rating = llmcomp["trust_in_ai"]
    df = rating.df({"base": [BASE_MODEL]}, lab=lab, progress=False)
    print(f"trust_in_ai on {BASE_MODEL}: {df['answer'].mean():.1f}")
