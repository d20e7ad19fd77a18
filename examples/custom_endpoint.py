"""A custom OpenAI-compatible endpoint (a local inference server, a router) by base URL.

Here the endpoint is a second sandbox, standing in for e.g. a vLLM server at
http://localhost:8000/v1; `EnvRouter` sends every model to it with the key in the named
environment variable.
"""

import os

from offline import offline_lab

from evals import EnvRouter, Question
from labmgr.sandbox import run_sandbox

with offline_lab() as lab, run_sandbox() as local_server:
    os.environ["LOCAL_SERVER_KEY"] = "sk-test-local"
    router = EnvRouter(base_url=local_server.base_url, key_env="LOCAL_SERVER_KEY")
    question = Question.create(
        type="free_form",
        name="hello_local",
        paraphrases=["Say hello in one sentence."],
        samples_per_paraphrase=2,
    )
    df = question.df({"local": ["gpt-4o-mini"]}, router=router, lab=lab, progress=False)
    print(df[["model", "answer"]].to_string(max_colwidth=60))
    served = local_server.stats()["requests"].get("chat.completions", 0)
    print(f"the local endpoint served {served} chat request(s)")
