"""Estimates before spending, cost per row, and the max_cost stop."""

from __future__ import annotations

from typing import Any

import pytest

from evals import Cache, EnvRouter, Question, RunSettings
from labmgr.pricing import price_for

from .conftest import chat_requests, served


def _question(samples: int = 4) -> Question:
    return Question.create(
        type="free_form",
        name="costly",
        paraphrases=["Name a colour.", "Name a fruit."],
        samples_per_paraphrase=samples,
        max_tokens=8,
    )


def test_estimate_predicts_the_requests_a_run_makes_and_spends_nothing(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    groups = {"a": ["gpt-4o-mini"], "b": ["gpt-4.1-mini"]}
    settings = fast_settings.model_copy(update={"use_n": False})
    estimate = _question().estimate(groups, cache=eval_cache, router=router, settings=settings)
    assert chat_requests(sandbox) == 0
    assert (estimate.requests, estimate.samples, estimate.cached_samples) == (16, 16, 0)
    assert estimate.completion_tokens == 16 * 8
    assert estimate.cost > 0 and not estimate.unpriced_models
    _question().df(groups, cache=eval_cache, router=router, settings=settings)
    assert chat_requests(sandbox) == 16
    after = _question(6).estimate(groups, cache=eval_cache, router=router, settings=settings)
    assert (after.samples, after.cached_samples) == (8, 16)


def test_cost_per_row_follows_the_price_table_and_sums_per_group(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    df = _question().df(
        {"a": ["gpt-4o-mini"], "u": ["gpt-4.1-mini"]},
        cache=eval_cache,
        router=router,
        settings=fast_settings,
    )
    for _, row in df.iterrows():
        price = price_for(row["model"])
        assert price is not None
        expected = (
            row["prompt_tokens"] * price.input + row["completion_tokens"] * price.output
        ) / 1e6
        assert row["cost"] == pytest.approx(expected)
    usage = sandbox.stats()["models"]["gpt-4o-mini"]
    in_a = df[df["group"] == "a"]
    assert in_a["prompt_tokens"].sum() == pytest.approx(usage["prompt_tokens"])
    assert in_a["completion_tokens"].sum() == pytest.approx(usage["completion_tokens"])
    assert df.groupby("group")["cost"].sum().gt(0).all()


def test_max_cost_stops_the_run_and_keeps_what_was_bought(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = _question(10)
    tight = fast_settings.model_copy(
        update={"use_n": False, "max_concurrency": 1, "max_cost": 1e-9}
    )
    with pytest.warns(UserWarning, match="max_cost"):
        df = q.df({"a": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=tight)
    bought = eval_cache.info().samples
    assert 1 <= bought < 20
    assert df["answer"].notna().sum() == bought
    assert df["error"].dropna().str.contains("max_cost").all()
    rest = fast_settings.model_copy(update={"use_n": False})
    q.df({"a": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=rest)
    assert served(sandbox) == 20
