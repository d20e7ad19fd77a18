"""Fully cached reloads: keys computed in bulk equal the reference ones, bulk reads return
exactly the cached samples, and a cached `df()` reads each request once and asks nothing."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evals import Cache, EnvRouter, Question, RunSettings
from evals.cache import CACHE_VERSION, ChatRequest, RequestBatch, SampleResult
from evals.runner import RequestOptions, endpoints_for, plan, plan_question, run_context

from .conftest import QUESTION_KINDS, chat_requests, served

MODELS = ["gpt-4o-mini", "gpt-4.1-nano"]

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
    found = Cache(tmp_path).lookup_chunks([wanted])

    assert set(found) == {full.cache_key, gappy.cache_key, beyond.cache_key}
    assert dict(found[full.cache_key]) == dict([_sample(ix) for ix in range(4)])
    assert found[full.cache_key].has_first(4) and found[full.cache_key].missing(4) == []
    assert found[gappy.cache_key].missing(4) == [1, 3]
    assert not found[gappy.cache_key].has_first(3)
    assert found[gappy.cache_key][2] == _sample(2)[1] and 1 not in found[gappy.cache_key]
    assert list(found[beyond.cache_key]) == [0, 1, 2]
    assert found[beyond.cache_key].missing(3) == []


def test_many_one_sample_requests_read_together_return_exactly_their_first_samples(
    tmp_path: Path,
) -> None:
    cache = Cache(tmp_path)
    verdicts = [_request(f"verdict {i}") for i in range(40)]
    for i, request in enumerate(verdicts):
        if i % 4 == 1:
            continue  # not cached
        cache.store(request, "judge", [_sample(1)] if i % 4 == 2 else [_sample(0), _sample(1)])
    answers = _request("answers")
    cache.store(answers, "q", [_sample(ix) for ix in range(3)])
    wanted = {request.cache_key: 1 for request in verdicts} | {answers.cache_key: 3}
    found = Cache(tmp_path).lookup_chunks([wanted])

    kept = {verdicts[i].cache_key for i in range(40) if i % 4 in (0, 3)}
    assert set(found) == kept | {answers.cache_key}
    for key in kept:
        assert dict(found[key]) == {0: _sample(0)[1]} and found[key].has_first(1)
    assert dict(found[answers.cache_key]) == dict([_sample(ix) for ix in range(3)])


def test_bulk_and_single_reads_agree(tmp_path: Path) -> None:
    cache, request = Cache(tmp_path), _request()
    cache.store(request, "q", [_sample(ix) for ix in range(5)])
    single = cache.lookup([request.cache_key])[request.cache_key]
    bulk = cache.lookup_chunks([{request.cache_key: 5}])[request.cache_key]
    assert single == bulk
    assert bulk.content == tuple(f"answer {ix}" for ix in range(5))


def _traced_df(question: Question, groups: Any, cache: Cache, **options: Any) -> Any:
    """The DataFrame and the SQL statements that built it."""
    statements: list[str] = []
    cache._backend.connect().set_trace_callback(statements.append)
    try:
        frame = question.df(groups, cache=cache, **options)
    finally:
        cache._backend.connect().set_trace_callback(None)
    return frame, statements


def test_a_cached_df_reads_each_request_once_and_asks_nothing(
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
    reloaded, statements = _traced_df(question, groups, eval_cache, **options)

    assert chat_requests(sandbox) == asked
    pd.testing.assert_frame_equal(first, reloaded)
    assert [s for s in statements if "frames" in s or "packs" in s] == []
    from_samples = [s for s in statements if "FROM samples" in s]
    assert len(from_samples) == 2 * 3  # one per distinct (model, paraphrase), none per sample
    assert len(reloaded) == 3 * 3 * 7 and reloaded["answer"].notna().all()


def _three_paraphrases(samples: int = 3) -> Question:
    return Question.create(
        type="free_form",
        name="reload",
        paraphrases=["One.", "Two.", "Three."],
        max_tokens=8,
        samples_per_paraphrase=samples,
    )


def test_clearing_a_model_buys_only_its_samples_again(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question, groups = _three_paraphrases(), {"all": MODELS}
    first = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)

    eval_cache.clear(model=MODELS[0])
    before = {model: served(sandbox, model) for model in MODELS}
    again = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)

    assert served(sandbox, MODELS[0]) - before[MODELS[0]] == 3 * 3
    assert served(sandbox, MODELS[1]) == before[MODELS[1]]
    assert again["answer"].notna().all() and len(again) == len(first)
    kept = again["model"] == MODELS[1]
    pd.testing.assert_frame_equal(again[kept], first[kept])


@pytest.mark.parametrize("samples", [1, 2])
def test_refusals_and_missing_text_read_back_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, samples: int
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-nowhere")
    options: dict[str, Any] = {
        "cache": Cache(tmp_path),
        "router": EnvRouter(base_url="http://127.0.0.1:9/v1"),  # never asked: all cached
        "settings": RunSettings(progress=False),
    }
    question = Question.create(
        type="free_form", name="r", paraphrases=["A."], samples_per_paraphrase=samples
    )
    groups = {"g": MODELS}
    fine = SampleResult("fine", None, "stop", 3.0, 1.0)
    refused = SampleResult(None, None, "refusal", 3.0, 0.0)
    stored = [[fine, refused], [fine, refused]] if samples == 2 else [[fine], [refused]]
    planned = plan_question(question, groups, run_context(**options).router)
    for p, answers in zip(planned, stored, strict=True):
        assert p.request is not None
        options["cache"].store(p.request, question.name, list(enumerate(answers)))

    frame = question.df(groups, **options)

    pattern = [True, False] * samples  # rows: model by model, sample by sample
    assert frame["error"].isna().tolist() == pattern
    assert set(frame["error"].dropna()) == {"the model refused"}
    assert [isinstance(a, str) for a in frame["answer"]] == pattern
    assert math.isnan(frame["answer"][1])
    assert frame["answer"].dtype == pd.Series(["text", None]).dtype


@pytest.mark.parametrize("kind", list(QUESTION_KINDS))
def test_every_question_type_reloads_the_frame_it_bought(
    sandbox: Any,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
    kind: str,
) -> None:
    question = Question.create(name="kinds", samples_per_paraphrase=3, **QUESTION_KINDS[kind])
    groups = {"a": MODELS, "b": MODELS[:1]}
    first = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    asked = chat_requests(sandbox)
    reloaded = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)

    assert chat_requests(sandbox) == asked
    pd.testing.assert_frame_equal(reloaded, first, check_exact=True)
    assert first["error"].isna().all()


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
