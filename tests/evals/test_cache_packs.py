"""Packs: the copy of a model's complete samples that makes a repeated reload one read.
They must give back exactly what the per-sample rows hold, never outlive a `clear`, and
never be needed: a damaged, missing or unstorable pack only costs speed."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from evals import Cache, EnvRouter, Question, RunSettings
from evals.cache import ChatRequest, Pack, SampleResult, UnreadablePack, chunk_digest
from evals.questions import RatingJudge
from evals.runner import plan_question, run_context
from labmgr.cli import app

from .conftest import QUESTION_KINDS, chat_requests, served

MODELS = ["gpt-4o-mini", "gpt-4.1-nano"]


@pytest.fixture
def eval_cache(tmp_path: Path) -> Cache:
    """A cache in a folder of its own."""
    return Cache(tmp_path / "cache")


def _request(text: str) -> ChatRequest:
    return ChatRequest("http://x/v1", "gpt-4o-mini", [{"role": "user", "content": text}], {})


def _question(samples: int = 3) -> Question:
    return Question.create(
        type="free_form",
        name="packed",
        paraphrases=["One.", "Two.", "Three."],
        max_tokens=8,
        samples_per_paraphrase=samples,
    )


def _stored_chunk(cache: Cache) -> dict[str, int]:
    """Two requests of three samples each, odd values included; returns the chunk."""
    odd = [
        SampleResult("plain", None, "stop", 13 / 3, 1.0),
        SampleResult(None, None, "refusal", 13 / 3, 0.0),
        SampleResult('\x00 "quoted" \u2028 é', '{"content": []}', "length", 13 / 3, 7.0),
    ]
    chunk = {}
    for text in ("a", "b"):
        request = _request(text)
        cache.store(request, "q", list(enumerate(odd)))
        chunk[request.cache_key] = 3
    return chunk


def test_a_pack_gives_back_exactly_the_samples_it_was_made_from(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    chunk = _stored_chunk(cache)
    rows = cache.lookup_first(chunk)

    decoded = Pack.from_blob(Pack.from_samples(chunk, rows).to_blob(), chunk)

    assert {key: dict(samples) for key, samples in decoded.samples().items()} == {
        key: dict(samples) for key, samples in rows.items()
    }
    assert decoded.numbers("prompt_tokens").tolist() == [13 / 3] * 6  # exact, not rounded


def test_a_pack_that_does_not_fit_its_chunk_is_refused(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    chunk = _stored_chunk(cache)
    blob = Pack.from_samples(chunk, cache.lookup_first(chunk)).to_blob()
    shorter = {key: 2 for key in chunk}
    with pytest.raises(UnreadablePack):
        Pack.from_blob(blob, shorter)
    with pytest.raises(UnreadablePack):
        Pack.from_blob(blob[: len(blob) // 2], chunk)
    assert chunk_digest(chunk) != chunk_digest(shorter)


def test_clearing_drops_every_pack_and_the_next_df_buys_only_what_was_cleared(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question, groups = _question(), {"all": MODELS}
    first = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    assert eval_cache.info().packs == 2

    shown = CliRunner().invoke(app, ["cache", "info", "--dir", str(eval_cache.directory)])
    assert "2 packs" in shown.output, shown.output

    eval_cache.clear(model=MODELS[0])
    assert eval_cache.info().packs == 0
    before = {model: served(sandbox, model) for model in MODELS}
    again = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)

    assert served(sandbox, MODELS[0]) - before[MODELS[0]] == 3 * 3
    assert served(sandbox, MODELS[1]) == before[MODELS[1]]
    assert again["answer"].notna().all() and len(again) == len(first)
    kept = again["model"] == MODELS[1]
    pd.testing.assert_frame_equal(again[kept], first[kept])


def test_a_pack_is_not_stored_when_the_cache_was_cleared_after_its_samples_were_read(
    tmp_path: Path,
) -> None:
    reader = Cache(tmp_path)
    chunk = _stored_chunk(reader)
    generation = reader._backend.generation()
    made = Pack.from_samples(chunk, reader.lookup_first(chunk))

    Cache(tmp_path).clear(question="q")  # another process, between the read and the write
    reader._write_packs(generation, [(chunk_digest(chunk), made)])
    assert reader.info().packs == 0

    reader._write_packs(reader._backend.generation(), [("d", made)])
    assert reader.info().packs == 1


def test_a_damaged_pack_is_replaced_and_the_frame_does_not_change(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question, groups = _question(), {"all": MODELS}
    first = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    asked = chat_requests(sandbox)
    with sqlite3.connect(eval_cache.path) as connection:
        connection.execute("UPDATE packs SET data = x'00ff00'")

    damaged = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    repaired = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)

    assert chat_requests(sandbox) == asked
    pd.testing.assert_frame_equal(damaged, first)
    pd.testing.assert_frame_equal(repaired, first)
    with sqlite3.connect(eval_cache.path) as connection:
        sizes = [len(row[0]) for row in connection.execute("SELECT data FROM packs")]
    assert len(sizes) == 2 and min(sizes) > 3


@pytest.mark.parametrize("room", ["none", "too little", "one pack"])
def test_packs_stay_within_their_size_limit(
    sandbox: Any,
    tmp_path: Path,
    router: EnvRouter,
    fast_settings: RunSettings,
    room: str,
) -> None:
    question, groups = _question(samples=4), {"all": MODELS}
    unlimited = Cache(tmp_path / "unlimited")
    reference = question.df(groups, cache=unlimited, router=router, settings=fast_settings)
    with sqlite3.connect(unlimited.path) as connection:
        sizes = [size for (size,) in connection.execute("SELECT size FROM packs")]
        connection.execute("DELETE FROM packs")
    assert len(sizes) == 2
    limit = {"none": 0, "too little": min(sizes) - 1, "one pack": max(sizes)}[room]

    limited = Cache(unlimited.directory, pack_limit_bytes=limit)
    frames = [
        question.df(groups, cache=limited, router=router, settings=fast_settings) for _ in range(3)
    ]

    for frame in frames:
        pd.testing.assert_frame_equal(frame, reference)
    info = limited.info()
    assert info.pack_bytes <= limit
    assert info.packs == (1 if room == "one pack" else 0)


@pytest.mark.parametrize("samples", [1, 2], ids=["rows", "pack"])
def test_refusals_and_missing_text_read_the_same_from_rows_and_from_packs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, samples: int
) -> None:
    """A model with one sample is read row by row; more make a pack."""
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

    from_rows = question.df(groups, **options)
    from_pack = question.df(groups, **options)

    assert options["cache"].info().packs == (2 if samples == 2 else 0)
    pd.testing.assert_frame_equal(from_rows, from_pack)
    pattern = [True, False] * samples  # rows: model by model, sample by sample
    assert from_pack["error"].isna().tolist() == pattern
    assert set(from_pack["error"].dropna()) == {"the model refused"}
    assert [isinstance(a, str) for a in from_pack["answer"]] == pattern
    assert math.isnan(from_pack["answer"][1])
    assert from_pack["answer"].dtype == pd.Series(["text", None]).dtype


def test_a_reload_while_another_process_writes_keeps_its_samples_and_skips_the_pack(
    tmp_path: Path,
) -> None:
    cache = Cache(tmp_path)
    chunk = _stored_chunk(cache)
    writer = sqlite3.connect(cache.path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # holds the write lock
    try:
        found = Cache(tmp_path).lookup_packed([chunk])
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert {key: len(found[key]) for key in chunk} == chunk
    assert cache.info().packs == 0


def test_a_cache_from_before_packs_upgrades_in_place(tmp_path: Path) -> None:
    chunk = _stored_chunk(Cache(tmp_path))
    with sqlite3.connect(tmp_path / "responses.sqlite") as connection:
        connection.execute("DROP TABLE packs")
        connection.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")

    upgraded = Cache(tmp_path)
    found = upgraded.lookup_packed([chunk])

    assert {key: len(found[key]) for key in chunk} == chunk
    assert upgraded.info().packs == 1 and upgraded.info().samples == 6


def test_clear_packs_drops_only_the_packs(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question, groups = _question(), {"all": MODELS}
    first = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    samples, asked = eval_cache.info().samples, chat_requests(sandbox)
    where = ["--dir", str(eval_cache.directory)]

    refused = CliRunner().invoke(app, ["cache", "clear", "--packs", "--model", MODELS[0], *where])
    assert refused.exit_code == 2 and eval_cache.info().packs == 2
    dropped = CliRunner().invoke(app, ["cache", "clear", "--packs", *where])
    assert dropped.exit_code == 0 and "dropped 2 packs" in dropped.output
    assert eval_cache.info().packs == 0 and eval_cache.info().samples == samples
    again = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    pd.testing.assert_frame_equal(again, first)
    assert chat_requests(sandbox) == asked and eval_cache.info().packs == 2


PACKS = {"repeated paraphrase": 2, "rating": 2, "next_token": 2, "rating judge": 3}
"""Packs of each kind: one per model, and the verdicts' (read from their logprob columns)."""


@pytest.mark.parametrize("kind", list(QUESTION_KINDS))
def test_every_question_type_reads_the_same_from_packs_and_from_rows(
    sandbox: Any,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
    kind: str,
) -> None:
    question = Question.create(name="kinds", samples_per_paraphrase=3, **QUESTION_KINDS[kind])
    packs = PACKS[kind]
    groups = {"a": MODELS, "b": MODELS[:1]}
    first = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    asked = chat_requests(sandbox)
    packed = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    eval_cache.drop_packs()
    from_rows = question.df(groups, cache=eval_cache, router=router, settings=fast_settings)

    assert chat_requests(sandbox) == asked
    assert eval_cache.info().packs == packs
    pd.testing.assert_frame_equal(packed, first, check_exact=True)
    pd.testing.assert_frame_equal(from_rows, first, check_exact=True)
    assert first["error"].isna().all()


VERDICT_TEXTS = [
    '[["90", -0.1], ["100", -2.5], ["x", -4.0]]',
    '[["7", -0.5], ["7", -0.9], [" 7", -1.3], ["101", -0.2]]',  # a token listed twice
    '[["no", -0.01], ["50", -5.0]]',  # a refusal: the mass is on a word
    "[]",
    '[["100", 0.0], ["0", -Infinity]]',
    None,
    "",
    '{"content": []}',  # not a list of pairs: read from the text, and named
    "[[5, -0.1]]",  # a token that is not text
    "[[not json",
]


def test_a_packs_read_logprobs_give_every_rating_verdict_its_text_gives(tmp_path: Path) -> None:
    """A rating judge reads a pack's verdicts from its logprob columns, not their text: the
    scores, token probabilities, rating probabilities and errors must be the same."""
    cache = Cache(tmp_path)
    chunk = {}
    for i, text in enumerate(VERDICT_TEXTS):
        request = _request(f"verdict {i}")
        cache.store(request, "q/judges", [(0, SampleResult("7", text, "stop", 9.0, 1.0))])
        chunk[request.cache_key] = 1
    keys = list(chunk)
    rows = cache.lookup_first(chunk)
    from_rows = [rows[key][0] for key in keys]
    pack = Pack.from_blob(Pack.from_samples(chunk, rows).to_blob(), chunk)
    from_pack = pack.first_samples(keys)
    judge = RatingJudge(name="j", model="gpt-4o-mini", paraphrases=["Rate {answer}"])

    read_from_text = judge.read_answers(from_rows)
    read_from_columns = judge.read_answers(from_pack)

    assert [sample.top is not None for sample in from_pack] == [True] * 5 + [False] * 5
    assert [sample.logprobs_json for sample in from_pack] == VERDICT_TEXTS  # the text kept
    for text, by_text, by_columns in zip(
        VERDICT_TEXTS, read_from_text, read_from_columns, strict=True
    ):
        if isinstance(by_text, Exception):
            assert type(by_columns) is type(by_text) and str(by_columns) == str(by_text), text
            continue
        assert not isinstance(by_columns, Exception), text
        assert by_columns["raw_answer"] == by_text["raw_answer"], text
        assert by_columns["probs"] == by_text["probs"], text
        same_nan = math.isnan(by_text["answer"]) and math.isnan(by_columns["answer"])
        assert same_nan or by_columns["answer"] == by_text["answer"], text
    assert read_from_columns[1]["raw_answer"]["7"] == pytest.approx(math.exp(-0.5) + math.exp(-0.9))
