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


def served(sandbox: Any, model: str | None = None) -> int:
    """Samples (choices) the sandbox served, for one model or all."""
    models = sandbox.stats()["models"]
    if model is not None:
        return int(models.get(model, {}).get("choices", 0))
    return sum(int(row["choices"]) for row in models.values())


def chat_requests(sandbox: Any) -> int:
    return int(sandbox.stats()["requests"].get("chat.completions", 0))
