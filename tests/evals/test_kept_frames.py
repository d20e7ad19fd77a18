"""Kept frames: a question's finished frame is kept in a local cache, and asking the same
question of the same models again gives it back. It must be exactly the frame the samples
give, be kept only when complete, never outlive a clear, never be found for a question, group
or judge that changed, and never be read where someone else could have written it."""

from __future__ import annotations

import os
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from evals import Cache, EnvRouter, Question, RunSettings
from labmgr.cli import app

from .conftest import NICE_JUDGE, QUESTION_KINDS, chat_requests

MODELS = ["gpt-4o-mini", "gpt-4.1-nano"]
GROUPS = {"a": MODELS, "b": MODELS[:1]}


def _judged(template: str = "Rate from 0 to 100 how nice this is: {answer}") -> Question:
    return Question.create(
        type="free_form",
        name="kept",
        paraphrases=["Name a colour.", "Name a fruit."],
        max_tokens=6,
        samples_per_paraphrase=3,
        judges={"nice": {**NICE_JUDGE, "paraphrases": [template]}},
    )


def _replace_kept_frames(file: Path | None, data: bytes) -> list[bytes]:
    """Overwrite every kept frame in the SQLite `file` with `data`; the frames it held."""
    assert file is not None
    with sqlite3.connect(file) as connection:
        held = [bytes(row[0]) for row in connection.execute("SELECT data FROM frames")]
        connection.execute("UPDATE frames SET data = ?", (data,))
    return held


@pytest.mark.parametrize("kind", list(QUESTION_KINDS))
def test_every_question_type_gives_back_the_frame_its_samples_give(
    sandbox: Any,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
    kind: str,
) -> None:
    question = Question.create(name="kinds", samples_per_paraphrase=3, **QUESTION_KINDS[kind])
    first = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    asked = chat_requests(sandbox)
    kept = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    without_frames = Cache(eval_cache.directory, frame_limit_bytes=0)  # type: ignore[arg-type]
    from_samples = question.df(GROUPS, cache=without_frames, router=router, settings=fast_settings)

    assert eval_cache.info().frames == 1
    assert chat_requests(sandbox) == asked
    pd.testing.assert_frame_equal(kept, first, check_exact=True)
    pd.testing.assert_frame_equal(from_samples, first, check_exact=True)
    assert list(kept.dtypes) == list(first.dtypes)


def test_asking_again_reads_the_kept_frame(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question = _judged()
    first = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    marked = first.assign(answer="from the kept frame")  # a kept frame that says so
    (blob,) = _replace_kept_frames(eval_cache.path, pickle.dumps(marked))

    again = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)

    assert (again["answer"] == "from the kept frame").all()
    assert len(blob) > 0


def test_a_changed_judge_group_or_sample_count_is_not_given_the_kept_frame(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    options = {"cache": eval_cache, "router": router, "settings": fast_settings}
    first = _judged().df(GROUPS, **options)
    other_judge = _judged("How nice is this, 0 to 100? {answer}").df(GROUPS, **options)
    other_groups = _judged().df({"a": MODELS}, **options)
    more = _judged().model_copy(update={"samples_per_paraphrase": 4}).df(GROUPS, **options)

    assert (other_judge["nice_question"] != first["nice_question"]).all()
    assert set(other_groups["group"]) == {"a"} and len(other_groups) == 2 * 2 * 3
    assert len(more) == len(first) // 3 * 4
    assert eval_cache.info().frames == 4


def test_a_frame_with_an_error_is_not_kept_and_the_next_ask_buys_what_failed(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    sandbox.set_faults(quota_requests=3)  # the run stops: the quota is spent
    question = _judged()
    with pytest.warns(UserWarning, match="stopped early"):
        failed = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    assert failed["error"].notna().any() and eval_cache.info().frames == 0

    sandbox.set_faults(quota_requests=None)
    again = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)

    assert again["error"].isna().all() and eval_cache.info().frames == 1


def test_a_clear_drops_the_kept_frames_and_the_next_ask_buys_again(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question = _judged()
    question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    asked = chat_requests(sandbox)

    eval_cache.clear()
    assert eval_cache.info().frames == 0
    again = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)

    assert chat_requests(sandbox) > asked
    assert again["error"].isna().all() and eval_cache.info().frames == 1


def test_a_frame_is_not_kept_when_the_cache_was_cleared_after_its_samples_were_read(
    tmp_path: Path,
) -> None:
    cache = Cache(tmp_path)
    cache.store_samples("key", "gpt-4o-mini", "q", [])  # makes the file; nothing cleared yet
    generation = cache.generation()
    Cache(tmp_path).clear()  # another process, between the read and the write

    cache.store_frame(generation, "stale", b"frame")
    cache.store_frame(cache.generation(), "fresh", b"frame")

    assert cache.read_frame("stale", generation) is None
    assert cache.read_frame("fresh", cache.generation()) == b"frame"
    assert cache.info().frames == 1


def test_frames_are_neither_read_nor_kept_in_a_cache_others_can_write(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question = _judged()
    first = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    assert eval_cache.path is not None and eval_cache.info().frames == 1
    _replace_kept_frames(eval_cache.path, b"\x00")  # would be read, if it were
    os.chmod(eval_cache.path, 0o664)

    again = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    eval_cache.clear()
    question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)

    pd.testing.assert_frame_equal(again, first, check_exact=True)
    assert eval_cache.info().frames == 0


def test_a_damaged_kept_frame_is_built_again(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question = _judged()
    first = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    _replace_kept_frames(eval_cache.path, b"\x80\x04\x95\x00")
    asked = chat_requests(sandbox)

    again = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)

    assert chat_requests(sandbox) == asked
    pd.testing.assert_frame_equal(again, first, check_exact=True)


def test_a_price_function_of_ones_own_keeps_no_frame(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    def flat(model: str, prompt_tokens: float, completion_tokens: float) -> float:
        return 1.0

    options = {"cache": eval_cache, "router": router, "settings": fast_settings}
    priced = _judged().df(GROUPS, price=flat, **options)
    assert eval_cache.info().frames == 0

    listed = _judged().df(GROUPS, **options)
    again = _judged().df(GROUPS, price=flat, **options)

    assert eval_cache.info().frames == 1
    assert (listed["cost"] != priced["cost"]).all()
    pd.testing.assert_frame_equal(again, priced, check_exact=True)


def test_cache_info_counts_the_kept_frames_and_clear_packs_drops_them(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question = _judged()
    first = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    where = ["--dir", str(eval_cache.directory)]

    shown = CliRunner().invoke(app, ["cache", "info", *where])
    assert shown.exit_code == 0 and "1 kept frames" in shown.output, shown.output
    dropped = CliRunner().invoke(app, ["cache", "clear", "--packs", *where])
    assert dropped.exit_code == 0 and "1 kept frames" in dropped.output, dropped.output
    assert eval_cache.info().frames == 0
    again = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    pd.testing.assert_frame_equal(again, first, check_exact=True)


@pytest.mark.postgres
def test_a_postgresql_cache_keeps_no_frames_in_the_database(
    sandbox: Any, postgres_url: str, router: EnvRouter, fast_settings: RunSettings
) -> None:
    cache = Cache(postgres_url)
    question = _judged()
    first = question.df(GROUPS, cache=cache, router=router, settings=fast_settings)
    again = question.df(GROUPS, cache=cache, router=router, settings=fast_settings)

    pd.testing.assert_frame_equal(again, first, check_exact=True)
    assert cache.info().frames == 0
    cache.close()


@pytest.mark.postgres
def test_a_postgresql_cache_keeps_its_frames_in_a_local_folder_that_a_clear_anywhere_voids(
    sandbox: Any,
    postgres_url: str,
    router: EnvRouter,
    fast_settings: RunSettings,
    tmp_path: Path,
) -> None:
    mine = Cache(postgres_url, frames_dir=tmp_path / "mine")
    question = _judged()
    options = {"router": router, "settings": fast_settings}
    first = question.df(GROUPS, cache=mine, **options)
    assert mine.info().frames == 1 and (tmp_path / "mine" / "frames.sqlite").is_file()
    marked = pickle.dumps(first.assign(answer="from the kept frame"))
    _replace_kept_frames(tmp_path / "mine" / "frames.sqlite", marked)
    assert (question.df(GROUPS, cache=mine, **options)["answer"] == "from the kept frame").all()
    asked = chat_requests(sandbox)

    elsewhere = Cache(postgres_url)  # another machine of the lab, its own folder or none
    elsewhere.clear()
    again = question.df(GROUPS, cache=mine, **options)

    assert chat_requests(sandbox) > asked  # bought again: the kept frame was not read
    assert again["error"].isna().all() and not (again["answer"] == "from the kept frame").any()
    assert mine.info().frames == 2  # the void one stays until a clear here, or the size limit
    mine.clear()
    assert mine.info().frames == 0
    for cache in (mine, elsewhere):
        cache.close()


def test_a_run_keeps_one_frame_per_question_and_a_second_run_reads_them(
    sandbox: Any,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
    tmp_path: Path,
) -> None:
    from evals import run_questions

    other = _judged().model_copy(update={"name": "other"})
    questions = [_judged(), other]
    options = {"cache": eval_cache, "router": router, "settings": fast_settings, "report": False}
    first = run_questions(questions, GROUPS, out=tmp_path / "first", **options)
    assert eval_cache.info().frames == 2  # the judged frames; not the answers judged on the way
    asked = chat_requests(sandbox)

    second = run_questions(questions, GROUPS, out=tmp_path / "second", **options)

    assert chat_requests(sandbox) == asked and eval_cache.info().frames == 2
    for name in ("kept", "other"):
        pd.testing.assert_frame_equal(second.samples(name), first.samples(name))


@pytest.mark.postgres
def test_a_lab_on_a_postgresql_cache_keeps_its_frames_in_its_cache_folder(
    sandbox: Any,
    postgres_url: str,
    router: EnvRouter,
    fast_settings: RunSettings,
    tmp_path: Path,
) -> None:
    from evals.runner import run_context
    from labmgr.settings import init_lab, load_settings

    home = init_lab(tmp_path / "lab").home
    config = home / "config.toml"
    config.write_text(
        config.read_text().replace("[lab]\n", f'[lab]\ncache_url = "{postgres_url}"\n')
    )
    lab = load_settings(home)
    context = run_context(lab=lab, router=router, settings=fast_settings)
    first = _judged().df(GROUPS, context=context)
    again = _judged().df(GROUPS, context=context)

    assert context.cache.path is None  # the answers are in PostgreSQL
    assert (lab.cache_dir / "frames.sqlite").is_file() and context.cache.info().frames == 1
    pd.testing.assert_frame_equal(again, first, check_exact=True)
    context.cache.close()
