"""Run one question in a separate process (for the crash and two-process tests).

usage: python child_run.py BASE_URL CACHE SAMPLES OUT_JSON [LEASE_SECONDS]
(CACHE is a folder or a cache URL)
"""

from __future__ import annotations

import json
import sys

from evals import Cache, EnvRouter, Question, RunSettings


def main() -> None:
    base_url, cache_dir, samples, out = sys.argv[1:5]
    lease = float(sys.argv[5]) if len(sys.argv) > 5 else 30.0
    question = Question.create(
        type="free_form",
        name="shared",
        paraphrases=["Name a colour."],
        samples_per_paraphrase=int(samples),
        max_tokens=5,
    )
    settings = RunSettings(max_concurrency=2, use_n=False, progress=False)
    df = question.df(
        {"g": ["gpt-4o-mini"]},
        cache=Cache(cache_dir, lease_seconds=lease),
        router=EnvRouter(base_url=base_url),
        settings=settings,
    )
    with open(out, "w") as handle:
        json.dump(
            {"answers": df["answer"].tolist(), "errors": df["error"].notna().sum().item()}, handle
        )


if __name__ == "__main__":
    main()
