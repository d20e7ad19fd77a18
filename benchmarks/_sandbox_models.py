"""Fine-tuned models made on a running sandbox for a benchmark to ask (its jobs take a fraction
of a second with a short `job_seconds`)."""

from __future__ import annotations

import json
import time

__all__ = ["sandbox_fine_tunes"]


def sandbox_fine_tunes(
    base_url: str, api_key: str, count: int, *, base: str, suffix: str, reply: str
) -> list[str]:
    """`count` fine-tunes of `base` named `<suffix>-<i>`, each trained on twelve short
    conversations whose answer is `reply` (formatted with the conversation's number `i`:
    it sets the models' leaning); their model names, once every job succeeded."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    lines = "".join(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": f"What should I do about problem {i}?"},
                    {"role": "assistant", "content": reply.format(i=i)},
                ]
            }
        )
        + "\n"
        for i in range(12)
    ).encode()
    training = client.files.create(file=(f"{suffix}.jsonl", lines), purpose="fine-tune")
    jobs = [
        client.fine_tuning.jobs.create(
            model=base, training_file=training.id, suffix=f"{suffix}-{i}"
        )
        for i in range(count)
    ]
    names = []
    for job in jobs:
        while job.status not in ("succeeded", "failed", "cancelled"):
            time.sleep(0.1)
            job = client.fine_tuning.jobs.retrieve(job.id)
        if job.fine_tuned_model is None:
            raise RuntimeError(f"sandbox fine-tune {job.id} ended {job.status}")
        names.append(job.fine_tuned_model)
    return names
