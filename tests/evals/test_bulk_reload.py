"""Fully cached reloads: keys computed in bulk equal the reference ones, bulk reads return
exactly the cached samples, and a cached `df()` reads each request once and asks nothing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evals import Cache, EnvRouter, Question, RunSettings
from evals.cache import CACHE_VERSION, ChatRequest, RequestBatch, SampleResult
from evals.runner import RequestOptions, endpoints_for, plan

from .conftest import chat_requests

MESSAGES = [
    [{"role": "user", "content": "Name a colour."}],
    [{"role": "system", "content": 'Réponds en français \u2028 \x00 "quoted"'}],
    [{"role": "user", "content": [{"type": "text", "text": "a list content"}]}],
    [{"role": "system", "content": "Be brief 😀"}, {"role": "user", "content": "</b> \\ \t"}],
    [{"role": "user", "content": "named", "name": "x"}],
    [{"content": "keys in another order", "role": "user"}],
]
PARAMS: dict[str, Any] = {"temperature": 1.0, "max_tokens": 16, "logit_bias": {"9": 5, "1": -5}}


def _reference_key(endpoint: str, model: str, messages: Any, params: Any) -> str:
    """The cache key as first defined: sha256 of one `json.dumps` of the whole request."""
    import hashlib

    canonical = json.dumps(
        {
            "v": CACHE_VERSION,
            "endpoint": endpoint.rstrip("/"),
            "model": model,
            "messages": messages,
            "params": params,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.parametrize("endpoint", ["http://a/v1", "http://a/v1/"])
@pytest.mark.parametrize("model", ["gpt-4o-mini", 'ft:gpt-4o-mini:org:"odd"\u00e9:1', "o4-mini"])
def test_keys_built_in_a_batch_equal_the_reference_keys(endpoint: str, model: str) -> None:
    batch = RequestBatch()
    for _ in range(2):  # the second round uses the batch's remembered parts
        for messages in MESSAGES:
            single = ChatRequest(endpoint, model, messages, PARAMS)
            batched = batch.request(endpoint, model, messages, PARAMS)
            assert batched.cache_key == single.cache_key
            assert batched.cache_key == _reference_key(endpoint, model, messages, PARAMS)
            assert batched == single


def test_planning_with_a_batch_adapts_reasoning_params_like_planning_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha")
    routes = endpoints_for(["o4-mini", "gpt-4.1"], EnvRouter(base_url="http://a/v1"))
    prepared = RequestOptions(adapt=True).prepare_models(routes, PARAMS, label="q")
    batch = RequestBatch()
    for model, route in routes.items():
        alone = plan(model, route, MESSAGES[0], prepared[model], 3)
        batched = plan(model, route, MESSAGES[0], prepared[model], 3, batch)
        assert alone.request is not None and batched.request is not None, route
        assert batched.request.params == alone.request.params
        assert batched.request.cache_key == alone.request.cache_key
    o4 = plan("o4-mini", routes["o4-mini"], MESSAGES[0], prepared["o4-mini"], 3, batch).request
    assert o4 is not None and "max_completion_tokens" in o4.params


def _request(text: str = "hi") -> ChatRequest:
    return ChatRequest("http://x/v1", "gpt-4o-mini", [{"role": "user", "content": text}], {})


def _sample(ix: int) -> tuple[int, SampleResult]:
    return ix, SampleResult(f"answer {ix}", None, "stop", 3.0, float(ix))


def test_reading_the_first_n_returns_exactly_those_samples(tmp_path: Path) -> None:
    cache, full, gappy, beyond = Cache(tmp_path), _request("a"), _request("b"), _request("c")
    cache.store(full, "q", [_sample(ix) for ix in range(4)])
    cache.store(gappy, "q", [_sample(0), _sample(2), _sample(5)])
    cache.store(beyond, "q", [_sample(ix) for ix in range(6)])
    wanted = {full.cache_key: 4, gappy.cache_key: 4, beyond.cache_key: 3, "absent": 2}
    found = Cache(tmp_path).lookup_first(wanted)

    assert set(found) == {full.cache_key, gappy.cache_key, beyond.cache_key}
    assert dict(found[full.cache_key]) == dict([_sample(ix) for ix in range(4)])
    assert found[full.cache_key].has_first(4) and found[full.cache_key].missing(4) == []
    assert found[gappy.cache_key].missing(4) == [1, 3]
    assert not found[gappy.cache_key].has_first(3)
    assert found[gappy.cache_key][2] == _sample(2)[1] and 1 not in found[gappy.cache_key]
    assert list(found[beyond.cache_key]) == [0, 1, 2]
    assert found[beyond.cache_key].missing(3) == []


def test_bulk_and_single_reads_agree(tmp_path: Path) -> None:
    cache, request = Cache(tmp_path), _request()
    cache.store(request, "q", [_sample(ix) for ix in range(5)])
    single = cache.lookup([request.cache_key])[request.cache_key]
    bulk = cache.lookup_first({request.cache_key: 5})[request.cache_key]
    assert single == bulk
    assert bulk.content == tuple(f"answer {ix}" for ix in range(5))


def _traced_df(question: Question, groups: Any, cache: Cache, **options: Any) -> Any:
    """The DataFrame and the SQL statements that built it."""
    statements: list[str] = []
    cache._backend._connect().set_trace_callback(statements.append)
    try:
        frame = question.df(groups, cache=cache, **options)
    finally:
        cache._backend._connect().set_trace_callback(None)
    return frame, statements


def test_a_cached_df_reads_one_pack_per_model_or_else_each_request_once(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    groups = {"base": ["gpt-4o-mini", "gpt-4.1-nano"], "again": ["gpt-4o-mini"]}
    question = Question.create(
        type="free_form",
        name="reload",
        paraphrases=["One.", "Two.", "Three."],
        max_tokens=8,
        samples_per_paraphrase=7,
    )
    first = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    asked = chat_requests(sandbox)

    options = {"router": router, "settings": fast_settings}
    packed, read_packs = _traced_df(question, groups, eval_cache, **options)
    with sqlite3.connect(eval_cache.path) as connection:
        connection.execute("DELETE FROM packs")
    unpacked, read_rows = _traced_df(question, groups, eval_cache, **options)

    assert chat_requests(sandbox) == asked
    pd.testing.assert_frame_equal(first, packed)
    pd.testing.assert_frame_equal(first, unpacked)
    assert [s for s in read_packs if "frames" in s] == []  # nothing pickled is read
    assert [s for s in read_packs if "FROM samples" in s] == []
    assert len([s for s in read_packs if "FROM packs" in s]) == 2  # one per model
    from_samples = [s for s in read_rows if "FROM samples" in s]
    assert len(from_samples) == 2 * 3  # one per distinct (model, paraphrase), none per sample
    assert len(packed) == 3 * 3 * 7 and packed["answer"].notna().all()


_RELOAD_AND_LIST_IMPORTS = """
import json, sys
from evals import Cache, EnvRouter, Question, RunSettings
question = Question.create(
    type="free_form", name="reload", paraphrases=["One.", "Two."], max_tokens=8,
    samples_per_paraphrase=3,
)
df = question.df(
    {"g": ["gpt-4o-mini"]}, cache=Cache(sys.argv[1]), router=EnvRouter(base_url=sys.argv[2]),
    settings=RunSettings(progress=False),
)
heavy = sorted(m for m in ("openai", "httpx2", "aiohttp") if m in sys.modules)
print(json.dumps({"rows": len(df), "answered": int(df["answer"].notna().sum()), "heavy": heavy}))
"""


def test_a_fully_cached_df_in_a_fresh_process_does_not_load_the_http_stack(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question = Question.create(
        type="free_form",
        name="reload",
        paraphrases=["One.", "Two."],
        max_tokens=8,
        samples_per_paraphrase=3,
    )
    question.df({"g": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=fast_settings)
    asked = chat_requests(sandbox)

    child = subprocess.run(
        [
            sys.executable,
            "-c",
            _RELOAD_AND_LIST_IMPORTS,
            str(eval_cache.directory),
            sandbox.base_url,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )

    assert json.loads(child.stdout) == {"rows": 6, "answered": 6, "heavy": []}
    assert chat_requests(sandbox) == asked
