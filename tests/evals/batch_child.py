"""Ask one question through the Batch API in a separate process (for the crash and
two-process batch tests).

usage: python batch_child.py BASE_URL CACHE_DIR SAMPLES OUT_JSON
"""

from __future__ import annotations

import json
import sys

from evals import EnvRouter, Question, RunSettings


def question(samples: int) -> Question:
    return Question.create(
        type="free_form",
        name="batched",
        paraphrases=["Name a colour.", "Name an animal."],
        samples_per_paraphrase=samples,
        max_tokens=5,
    )


def main() -> None:
    base_url, cache_dir, samples, out = sys.argv[1:5]
    settings = RunSettings(batch=True, batch_poll_seconds=0.05, use_n=False, progress=False)
    df = question(int(samples)).df(
        {"g": ["gpt-4o-mini"]},
        cache=cache_dir,
        router=EnvRouter(base_url=base_url),
        settings=settings,
    )
    with open(out, "w") as handle:
        json.dump(
            {"answers": df["answer"].tolist(), "errors": df["error"].notna().sum().item()}, handle
        )


if __name__ == "__main__":
    main()
