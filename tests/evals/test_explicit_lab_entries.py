"""The Python entries of evals work on the lab they are given (`lab=`, `home=`, a context),
find one only when a part only a lab can give is missing, and never look when the cache
and the router are given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.evals import TEST_KEY
from fixtures.lab import LabEnv

from evals import Cache, EnvRouter, Question, RunSettings, groups, run_context, run_questions
from jobs_db import FinetuneJob, open_database, upsert_job
from labmgr.errors import LabNotFound
from labmgr.settings import Settings, init_lab, load_settings

GROUPS = {"base": ["gpt-4o-mini"]}


def _question(name: str = "colour") -> Question:
    return Question.create(
        type="free_form", name=name, paraphrases=[f"Name a colour ({name})."], max_tokens=5
    )


@pytest.fixture
def labs(clean_lab_env: LabEnv, sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Lab A elsewhere, lab B around the working folder; models answer on the sandbox."""
    sandbox.reset()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
    a = load_settings(init_lab(clean_lab_env.root / "a").home)
    b = load_settings(init_lab(clean_lab_env.work).home)
    assert load_settings().home == b.home
    return {"a": a, "b": b, "settings": RunSettings(progress=False)}


def _samples(lab: Settings) -> int:
    return Cache(lab.cache_dir).info().samples


def test_lab_and_home_choose_the_lab_from_inside_another(labs: dict[str, Any]) -> None:
    a, b, settings = labs["a"], labs["b"], labs["settings"]
    _question("by-lab").df(GROUPS, lab=a, settings=settings)
    _question("by-home").df(GROUPS, home=a.home, settings=settings)
    assert _samples(a) == 2 and _samples(b) == 0
    estimate = _question("by-home").estimate(GROUPS, home=a.home)
    assert (estimate.samples, estimate.cached_samples) == (0, 1)
    _question("found").df(GROUPS, settings=settings)  # nothing named: the lab around
    assert _samples(b) == 1


def test_run_questions_writes_into_the_lab_it_is_given(labs: dict[str, Any]) -> None:
    a, b = labs["a"], labs["b"]
    run = run_questions([_question()], GROUPS, lab=a, report=False, progress=False)
    assert run.path.parent == a.runs_dir
    assert run.info["settings"]["cache_dir"] == str(a.cache_dir)
    assert _samples(a) == 1 and not (b.runs_dir.exists() and any(b.runs_dir.iterdir()))


def test_a_context_is_shared_and_its_lab_prices_and_defaults_are_used(
    labs: dict[str, Any],
) -> None:
    a = labs["a"]
    config = a.config_path
    config.write_text(
        config.read_text() + '\n[prices."gpt-4o-mini"]\ninput = 1000.0\noutput = 1000.0\n'
    )
    priced = load_settings(a.home)
    ctx = run_context(lab=priced)
    assert ctx.settings.max_concurrency == priced.eval.max_concurrency
    assert ctx.settings.max_attempts == priced.eval.max_retries + 1
    frame = _question().df(GROUPS, context=ctx.with_settings(progress=False))
    rate = 1000.0 / 1_000_000
    expected = (frame["prompt_tokens"] + frame["completion_tokens"]) * rate
    assert frame["cost"].tolist() == pytest.approx(expected.tolist())


def test_groups_from_the_database_of_the_lab_given(labs: dict[str, Any]) -> None:
    a, b = labs["a"], labs["b"]
    for lab, suffix in ((a, "in-a"), (b, "in-b")):
        with open_database(lab.db_url) as db:
            upsert_job(
                db,
                FinetuneJob(
                    id=f"ftjob-{suffix}",
                    status="succeeded",
                    base_model="gpt-4o-mini",
                    suffix=suffix,
                    fine_tuned_model=f"ft:gpt-4o-mini:org:{suffix}:1",
                ),
            )
    expected = {"gpt-4o-mini": ["gpt-4o-mini"], "in-a": ["ft:gpt-4o-mini:org:in-a:1"]}
    assert groups.from_db("suffix", lab=a) == expected
    assert groups.from_db("suffix", home=a.home) == expected
    assert "in-b" in groups.from_db("suffix")


def test_explicit_cache_and_router_need_no_lab(
    clean_lab_env: LabEnv, sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.reset()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("LABMGR_HOME", str(tmp_path / "no-such-lab"))
    with pytest.raises(LabNotFound):
        load_settings()  # any look for a lab would fail
    frame = _question().df(
        GROUPS,
        cache=Cache(tmp_path / "cache"),
        router=EnvRouter(base_url=sandbox.base_url),
        settings=RunSettings(progress=False),
    )
    assert frame["answer"].notna().all() and frame["cost"].gt(0).all()
    with pytest.raises(LabNotFound):
        _question().df(GROUPS, cache=Cache(tmp_path / "cache"))  # the router needs a lab
