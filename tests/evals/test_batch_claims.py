"""The Batch API path and the synchronous runner share one cache's claims: a synchronous run
does not buy what a batch in flight holds, a batch run does not submit what a synchronous run
is buying; and a batch run whose cache is in PostgreSQL keeps its records there."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pandas as pd
import pytest
from fixtures.evals import TEST_KEY

from evals import Cache, EnvRouter, Question, RunSettings
from evals.cache import SampleResult
from evals.runner import collect_batches, plan_question, run_context
from labmgr.sandbox import run_sandbox

from .batch_child import question as child_question

MODEL = "gpt-4o-mini"


@pytest.fixture
def env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)


@pytest.fixture
def batches_sandbox() -> Iterator[Any]:
    with run_sandbox(batch_seconds=0.5) as handle:
        yield handle


def _settings(**changes: Any) -> RunSettings:
    base = RunSettings(
        max_concurrency=16,
        request_timeout=10,
        progress=False,
        batch=True,
        batch_poll_seconds=0.05,
        use_n=False,
    )
    return base.updated(**changes)


def _requests(sandbox: Any) -> dict[str, int]:
    return {k: int(v) for k, v in sandbox.stats()["requests"].items()}


def _batch_count(sandbox: Any) -> int:
    client = openai.OpenAI(base_url=sandbox.base_url, api_key=TEST_KEY, max_retries=0)
    return len(list(client.batches.list(limit=100)))


def test_a_synchronous_run_leaves_what_a_batch_in_flight_holds_to_the_batch(
    tmp_path: Path, env_key: None
) -> None:
    with run_sandbox(batch_seconds=1.5) as sandbox:
        router = EnvRouter(base_url=sandbox.base_url)
        cache = Cache(tmp_path / "cache")
        q = child_question(3)
        submitted = q.ask(
            {"g": [MODEL]}, cache=cache, router=router, settings=_settings(batch_wait=False)
        )
        assert submitted.outcome.pending == 6

        meanwhile = q.ask(
            {"g": [MODEL]}, cache=cache, router=router, settings=_settings(batch=False)
        )
        assert _requests(sandbox).get("chat.completions", 0) == 0, "bought twice"
        assert meanwhile.outcome.pending == 6
        assert meanwhile.frame["error"].str.contains("labmgr batches collect").all()
        assert cache.info().claims == 0, "claims left behind"

        collected = collect_batches(run_context(cache=cache, router=router, settings=_settings()))
        assert collected.samples == 6
        after = q.df({"g": [MODEL]}, cache=cache, router=router, settings=_settings(batch=False))
        assert after["answer"].notna().all() and len(after) == 6
        assert _requests(sandbox).get("chat.completions", 0) == 0
        assert _batch_count(sandbox) == 1


def test_a_batch_run_waits_for_what_a_synchronous_run_is_buying_instead_of_submitting_it(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    cache = Cache(tmp_path / "cache")
    q: Question = child_question(2)
    planned = plan_question(q, {"g": [MODEL]}, router)
    items = [(p.request.cache_key, ix) for p in planned if p.request for ix in range(p.samples)]
    result: dict[str, pd.DataFrame] = {}

    def batch_run() -> None:
        result["df"] = q.df({"g": [MODEL]}, cache=cache, router=router, settings=_settings())

    with cache.claims() as buyer:  # a synchronous run of another process, buying them all
        assert buyer.take(items) == set(items)
        thread = threading.Thread(target=batch_run)
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive(), "the batch run did not wait"
        assert _batch_count(batches_sandbox) == 0, "submitted what another run is buying"
        for n, (key, ix) in enumerate(items):
            answer = SampleResult(f"bought synchronously {n}", None, "stop", 5.0, 3.0)
            cache.store_many([(key, MODEL, q.name, [(ix, answer)])])
        buyer.release()
    thread.join(60)
    assert not thread.is_alive()
    df = result["df"]
    assert sorted(df["answer"]) == sorted(f"bought synchronously {n}" for n in range(len(items)))
    assert _batch_count(batches_sandbox) == 0
    assert _requests(batches_sandbox).get("chat.completions", 0) == 0


def test_a_batch_run_sends_what_a_synchronous_buyer_gave_up_without_storing(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    cache = Cache(tmp_path / "cache")
    q = child_question(2)
    planned = plan_question(q, {"g": [MODEL]}, router)
    items = [(p.request.cache_key, ix) for p in planned if p.request for ix in range(p.samples)]
    result: dict[str, pd.DataFrame] = {}

    def batch_run() -> None:
        result["df"] = q.df({"g": [MODEL]}, cache=cache, router=router, settings=_settings())

    with cache.claims() as buyer:
        buyer.take(items)
        thread = threading.Thread(target=batch_run)
        thread.start()
        time.sleep(0.5)
        assert _batch_count(batches_sandbox) == 0
    # The buyer ended without storing anything (its claims released on the way out).
    thread.join(60)
    assert result["df"]["answer"].notna().all() and len(result["df"]) == len(items)
    assert _batch_count(batches_sandbox) == 1


@pytest.mark.postgres
def test_a_batch_run_with_its_cache_in_postgresql_keeps_its_records_there(
    batches_sandbox: Any, tmp_path: Path, env_key: None, postgres_url: str
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    q = Question.create(
        type="free_form",
        name="batched",
        paraphrases=["Name a colour.", "Name an animal."],
        samples_per_paraphrase=3,
        temperature=0,
        max_tokens=5,
    )
    batched = q.ask({"g": [MODEL]}, cache=postgres_url, router=router, settings=_settings())
    assert _requests(batches_sandbox).get("chat.completions", 0) == 0
    assert batched.outcome.errors == {} and batched.frame["answer"].notna().all()
    cache = Cache(postgres_url)
    records = cache.batches.records()
    assert [record.state for record in records] == ["collected"]
    assert records[0].samples == 6 and cache.info().samples == 6

    before = _requests(batches_sandbox)
    again = q.df({"g": [MODEL]}, cache=postgres_url, router=router, settings=_settings(batch=False))
    assert _requests(batches_sandbox) == before
    pd.testing.assert_frame_equal(again, batched.frame)
    # The same run with its cache in a SQLite file gives the same frame.
    on_sqlite = q.df({"g": [MODEL]}, cache=tmp_path / "cache", router=router, settings=_settings())
    pd.testing.assert_frame_equal(on_sqlite, batched.frame)
