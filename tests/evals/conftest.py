"""Helpers for eval tests: what the sandbox served (the fixtures are in fixtures/evals.py)."""

from __future__ import annotations

from typing import Any


def served(sandbox: Any, model: str | None = None) -> int:
    """Samples (choices) the sandbox served, for one model or all."""
    models = sandbox.stats()["models"]
    if model is not None:
        return int(models.get(model, {}).get("choices", 0))
    return sum(int(row["choices"]) for row in models.values())


def chat_requests(sandbox: Any) -> int:
    return int(sandbox.stats()["requests"].get("chat.completions", 0))
