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


_SCHEMA_2 = """
CREATE TABLE samples (
    request_key TEXT NOT NULL, sample_ix INTEGER NOT NULL, model TEXT NOT NULL,
    question TEXT NOT NULL, content TEXT, logprobs TEXT, finish_reason TEXT,
    prompt_tokens REAL NOT NULL, completion_tokens REAL NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (request_key, sample_ix)
) WITHOUT ROWID;
CREATE TABLE errors (request_key TEXT NOT NULL, sample_ix INTEGER NOT NULL, model TEXT NOT NULL,
    question TEXT NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE packs (digest TEXT PRIMARY KEY, samples INTEGER NOT NULL, size INTEGER NOT NULL,
    created REAL NOT NULL, data BLOB NOT NULL);
INSERT INTO meta VALUES ('schema_version', '2');
"""


def test_a_cache_from_before_reasoning_tokens_is_upgraded_in_place(tmp_path: Path) -> None:
    import sqlite3

    request = _request()
    with sqlite3.connect(tmp_path / "responses.sqlite") as old:
        old.executescript(_SCHEMA_2)
        old.execute(
            "INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?,?)",
            (request.cache_key, 0, request.model, "q", "old", None, "stop", 5.0, 2.0, 0.0),
        )
    old.close()
    cache = Cache(tmp_path)
    cache.store(request, "q", [(1, SampleResult("new", None, "stop", 5.0, 9.0, 7.0))])
    found = Cache(tmp_path).lookup([request.cache_key])[request.cache_key]
    assert found[0] == SampleResult("old", None, "stop", 5.0, 2.0, None)
    assert found[1] == SampleResult("new", None, "stop", 5.0, 9.0, 7.0)
    packed = Cache(tmp_path).lookup_packed([{request.cache_key: 2}])[request.cache_key]
    assert [packed[ix].reasoning_tokens for ix in (0, 1)] == [None, 7.0]
