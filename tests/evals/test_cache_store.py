"""The cache file: samples by (request, index), errors never returned as answers, clearing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evals import Cache, EnvRouter, Question, RunSettings
from evals.cache import ChatRequest, SampleResult
from evals.errors import CacheError

from .conftest import chat_requests


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
    cache.record_errors(request.cache_key, request.model, "q", [0, 1], message="429: slow down")
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
    bulk = Cache(tmp_path).lookup_chunks([{request.cache_key: 2}])[request.cache_key]
    assert [bulk[ix].reasoning_tokens for ix in (0, 1)] == [None, 7.0]
    with sqlite3.connect(tmp_path / "responses.sqlite") as upgraded:
        tables = {row[0] for row in upgraded.execute("SELECT name FROM sqlite_master")}
    upgraded.close()
    assert "packs" not in tables


def test_a_cache_with_packs_reads_every_sample_and_loses_the_packs_table(
    tmp_path: Path,
) -> None:
    """A cache of schema 6 kept packs (copies of a model's samples) beside the rows."""
    requests = [_request(text=f"q{n}") for n in range(3)]
    cache = Cache(tmp_path)
    for request in requests:
        cache.store(request, "q", [(ix, _sample(f"{request.cache_key} {ix}")) for ix in range(4)])
    cache.close()
    with sqlite3.connect(tmp_path / "responses.sqlite") as old:
        old.execute(
            "CREATE TABLE packs (digest TEXT PRIMARY KEY, samples INTEGER NOT NULL, "
            "size INTEGER NOT NULL, created REAL NOT NULL, data BLOB NOT NULL)"
        )
        old.execute("INSERT INTO packs VALUES ('d', 12, 3, 0.0, x'00ff00')")
        old.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    old.close()

    reopened = Cache(tmp_path)
    found = reopened.lookup_chunks([{r.cache_key: 4 for r in requests}])

    assert {key: [s.content for s in samples.values()] for key, samples in found.items()} == {
        r.cache_key: [f"{r.cache_key} {ix}" for ix in range(4)] for r in requests
    }
    assert reopened.info().samples == 12
    with sqlite3.connect(tmp_path / "responses.sqlite") as upgraded:
        tables = {row[0] for row in upgraded.execute("SELECT name FROM sqlite_master")}
    upgraded.close()
    assert "packs" not in tables and "samples" in tables


def test_a_reload_while_another_process_writes_reads_every_sample(tmp_path: Path) -> None:
    cache, request = Cache(tmp_path), _request()
    cache.store(request, "q", [(ix, _sample(str(ix))) for ix in range(3)])
    writer = sqlite3.connect(cache.path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # holds the write lock
    try:
        found = Cache(tmp_path).lookup_chunks([{request.cache_key: 3}])
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert [s.content for s in found[request.cache_key].values()] == ["0", "1", "2"]


def test_a_cache_file_that_is_not_a_database_is_refused_in_one_sentence_before_buying(
    sandbox: Any, router: EnvRouter, fast_settings: RunSettings, tmp_path: Path
) -> None:
    cache = Cache(tmp_path / "cache")
    assert cache.path is not None
    cache.path.parent.mkdir(parents=True)
    cache.path.write_bytes(b"these are not the answers you are looking for\n" * 100)
    before = chat_requests(sandbox)
    q = Question.create(type="free_form", name="damaged", paraphrases=["Hi."], max_tokens=5)
    with pytest.raises(CacheError, match=r"^the response cache .* is damaged \(") as raised:
        q.df({"g": ["gpt-4o-mini"]}, cache=cache, router=router, settings=fast_settings)
    assert "Move the file away" in (raised.value.hint or "")
    assert chat_requests(sandbox) == before  # nothing bought that could not be stored


def test_a_cache_folder_that_is_a_file_is_refused_in_one_sentence_before_buying(
    sandbox: Any, router: EnvRouter, fast_settings: RunSettings, tmp_path: Path
) -> None:
    in_the_way = tmp_path / "cache"
    in_the_way.write_text("not a folder\n")
    before = chat_requests(sandbox)
    q = Question.create(type="free_form", name="blocked", paraphrases=["Hi."], max_tokens=5)
    with pytest.raises(CacheError, match=r"^cannot .* the response cache at ") as raised:
        q.df({"g": ["gpt-4o-mini"]}, cache=in_the_way, router=router, settings=fast_settings)
    assert str(in_the_way) in str(raised.value) and "\n" not in str(raised.value)
    assert "writable" in (raised.value.hint or "")
    assert in_the_way.read_text() == "not a folder\n"
    assert chat_requests(sandbox) == before
