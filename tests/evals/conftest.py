"""Fixtures for eval tests: a cache in a temporary directory and a router to the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals import Cache, EnvRouter, RunSettings

TEST_KEY = "sk-test-alpha"


@pytest.fixture
def eval_cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path / "cache")


@pytest.fixture
def router(sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> EnvRouter:
    """A router to the sandbox, whose counters and faults start from zero."""
    sandbox.reset()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    return EnvRouter(base_url=sandbox.base_url)


@pytest.fixture
def fast_settings() -> RunSettings:
    """Small retry waits and timeouts, no live progress."""
    return RunSettings(
        max_concurrency=16, request_timeout=5, max_backoff_seconds=0.05, progress=False
    )


def served(sandbox: Any, model: str | None = None) -> int:
    """Samples (choices) the sandbox served, for one model or all."""
    models = sandbox.stats()["models"]
    if model is not None:
        return int(models.get(model, {}).get("choices", 0))
    return sum(int(row["choices"]) for row in models.values())


def chat_requests(sandbox: Any) -> int:
    return int(sandbox.stats()["requests"].get("chat.completions", 0))
