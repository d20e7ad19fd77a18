"""Helpers for eval tests: what the sandbox served, and a judge several tests ask (the
fixtures are in fixtures/evals.py)."""

from __future__ import annotations

from typing import Any

NICE_JUDGE: dict[str, Any] = {
    "type": "rating_judge",
    "model": "gpt-4.1-mini",
    "paraphrases": ["Rate from 0 to 100 how nice this is: {answer}"],
}
"""A 0–100 rating judge that reads only the answer."""

QUESTION_KINDS: dict[str, dict[str, Any]] = {
    "repeated paraphrase": {"type": "free_form", "paraphrases": ["Same.", "Same.", "Other."]},
    "rating": {"type": "rating", "paraphrases": ["Rate red.", "Rate blue."]},
    "next_token": {"type": "next_token", "paraphrases": ["Pick a letter.", "Pick a digit."]},
    "rating judge": {
        "type": "free_form",
        "paraphrases": ["Name a colour.", "Name a fruit."],
        "max_tokens": 6,
        "judges": {"nice": NICE_JUDGE},
    },
}
"""A question of each kind whose frame must read the same however it is found (name and
samples left to the test)."""


def served(sandbox: Any, model: str | None = None) -> int:
    """Samples (choices) the sandbox served, for one model or all."""
    models = sandbox.stats()["models"]
    if model is not None:
        return int(models.get(model, {}).get("choices", 0))
    return sum(int(row["choices"]) for row in models.values())


def chat_requests(sandbox: Any) -> int:
    return int(sandbox.stats()["requests"].get("chat.completions", 0))
