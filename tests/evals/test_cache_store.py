"""The cache file: samples by (request, index), errors never returned as answers, clearing."""

from __future__ import annotations

from pathlib import Path

from evals import Cache
from evals.cache import ChatRequest, SampleResult


def _request(model: str = "gpt-4o-mini", text: str = "hi") -> ChatRequest:
    return ChatRequest(
        endpoint="http://x/v1",
        model=model,
        messages=[{"role": "user", "content": text}],
        params={"temperature": 1},
    )


def _sample(text: str) -> SampleResult:
    return SampleResult(text, None, "stop", 5.0, 2.0)


def test_the_first_stored_answer_of_a_sample_wins(tmp_path: Path) -> None:
    cache, request = Cache(tmp_path), _request()
    cache.store(request, "q", [(0, _sample("first")), (1, _sample("b"))])
    cache.store(request, "q", [(0, _sample("second"))])
    found = Cache(tmp_path).lookup([request.cache_key])[request.cache_key]
    assert {ix: s.content for ix, s in found.items()} == {0: "first", 1: "b"}


def test_errors_are_recorded_but_never_returned_as_answers(tmp_path: Path) -> None:
    cache, request = Cache(tmp_path), _request()
    cache.record_error(request, "q", [0, 1], kind="error", message="429: slow down")
    assert cache.lookup([request.cache_key]) == {}
    assert cache.info().errors == 2
    cache.store(request, "q", [(0, _sample("ok"))])
    assert cache.info().errors == 1


def test_clear_by_question_or_model_leaves_the_rest(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    a, b = _request("m1"), _request("m2")
    cache.store(a, "q1", [(0, _sample("x"))])
    cache.store(b, "q1", [(0, _sample("y"))])
    cache.store(_request("m1", "judge me"), "q1/judges", [(0, _sample("7"))])
    cache.store(_request("m1", "other"), "q2", [(0, _sample("z"))])
    assert cache.clear(model="m2") == 1
    assert cache.clear(question="q1") == 2
    assert [(e.question, e.model) for e in cache.info().entries] == [("q2", "m1")]
    assert cache.clear() == 1
    assert cache.info().samples == 0
