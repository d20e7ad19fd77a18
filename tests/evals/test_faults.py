"""A run through injected 429s, 5xx, dropped connections and timeouts still gets every sample
exactly once."""

from __future__ import annotations

import sqlite3
from typing import Any

import pandas as pd
import pytest

from evals import Cache, EnvRouter, Question, RunSettings


def _rows_per_sample(cache: Cache) -> list[int]:
    with sqlite3.connect(cache.path) as db:
        return [
            n for (n,) in db.execute("SELECT COUNT(*) FROM samples GROUP BY request_key, sample_ix")
        ]


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_run_with_429s_500s_and_drops_completes_with_every_sample_and_no_duplicates(
    sandbox: Any,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
    transport: str,
) -> None:
    sandbox.set_faults(rate_429=0.2, rate_500=0.05, rate_drop=0.05, retry_after_ms=2)
    q = Question.create(
        type="free_form",
        name="faulty",
        paraphrases=["Name a colour.", "Name a fruit."],
        samples_per_paraphrase=10,
        max_tokens=5,
    )
    settings = fast_settings.model_copy(
        update={"use_n": False, "max_attempts": 30, "http_transport": transport}
    )
    df = q.df(
        {"g": ["gpt-4o-mini", "gpt-4.1-mini"]}, cache=eval_cache, router=router, settings=settings
    )
    assert len(df) == 40
    assert df["answer"].notna().all() and df["error"].isna().all()
    rows = _rows_per_sample(eval_cache)
    assert len(rows) == 40 and set(rows) == {1}
    faults = sandbox.stats().get("faults_injected")
    if faults is not None:
        assert sum(faults.values()) > 0


def test_timeouts_are_retried_within_the_time_bound(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    sandbox.set_faults(rate_timeout=0.3, timeout_hold_max_s=1.0)
    q = Question.create(
        type="free_form", name="slow", paraphrases=["Hi."], samples_per_paraphrase=4, max_tokens=5
    )
    settings = fast_settings.model_copy(
        update={"use_n": False, "request_timeout": 0.3, "max_attempts": 20}
    )
    df = q.df({"g": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=settings)
    assert df["answer"].notna().all()
    assert eval_cache.info().samples == 4


def test_running_out_of_credits_stops_the_run_keeps_what_was_bought_and_resumes(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    models = ["gpt-4o-mini", "gpt-4.1-nano", "gpt-4.1-mini"]
    q = Question.create(
        type="free_form",
        name="credits",
        paraphrases=[f"Name a colour ({i})." for i in range(6)],
        samples_per_paraphrase=4,
        max_tokens=5,
    )
    settings = fast_settings.model_copy(update={"max_concurrency": 2})
    sandbox.set_faults(quota_requests=5)  # 5 of 18 requests (4 samples each, with `n`)

    with pytest.warns(UserWarning, match="stopped early.*quota"):
        df = q.df({"all": models}, cache=eval_cache, router=router, settings=settings)

    answered = df["answer"].notna()
    assert answered.sum() == 5 * 4 == eval_cache.info().samples  # nothing cached as ""
    assert df.loc[~answered, "error"].str.contains("quota").all()
    assert sandbox.stats()["faults_injected"]["insufficient_quota"] <= 2  # stopped at once

    sandbox.set_faults(quota_requests=None)  # credits topped up
    before = sandbox.stats()["models"]
    again = q.df({"all": models}, cache=eval_cache, router=router, settings=settings)
    bought = sum(
        int(row["choices"]) - int(before.get(model, {}).get("choices", 0))
        for model, row in sandbox.stats()["models"].items()
    )
    assert again["answer"].notna().all() and bought == (18 - 5) * 4
    kept = ["model", "paraphrase_ix", "sample_ix", "answer", "prompt_tokens", "cost"]
    pd.testing.assert_frame_equal(again.loc[answered, kept], df.loc[answered, kept])


def test_a_base_url_without_http_says_so_and_asks_nothing(
    eval_cache: Cache, fast_settings: RunSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-no-scheme")
    q = Question.create(type="free_form", name="scheme", paraphrases=["Hi."], max_tokens=5)
    router = EnvRouter(base_url="127.0.0.1:8000/v1")
    with pytest.warns(UserWarning, match="must start with http:// or https://"):
        df = q.df({"g": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=fast_settings)
    assert df["error"].str.contains("127.0.0.1:8000/v1", regex=False).all()
    assert eval_cache.info().samples == 0


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_model_look_up_that_times_out_does_not_stop_the_run(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings, transport: str
) -> None:
    sandbox.set_faults(rate_timeout=1.0, timeout_hold_max_s=1.0, endpoints=["models.retrieve"])
    q = Question.create(type="free_form", name="unlooked", paraphrases=["Hi."], max_tokens=5)
    settings = fast_settings.model_copy(
        update={"request_timeout": 0.3, "http_transport": transport}
    )
    try:
        df = q.df({"g": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=settings)
    finally:
        timeouts = sandbox.stats()["faults_injected"].get("timeout", 0)
        sandbox.reset()
    assert timeouts >= 1  # the look-up was held past its timeout
    assert df["answer"].notna().all() and df["error"].isna().all()
