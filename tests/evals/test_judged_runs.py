"""Judges against the sandbox: both YAML dialects, literal braces, one verdict per pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals import Cache, EnvRouter, Question, RunSettings, load_questions

from .conftest import NICE_JUDGE, chat_requests, served

DATA = Path(__file__).parent / "data"


def test_llmcomp_yaml_runs_with_a_named_and_an_inline_judge(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = load_questions(DATA / "llmcomp_dialect.yaml")["favourite_colour"]
    df = q.df({"base": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=fast_settings)
    assert len(df) == 4
    assert df["quality"].notna().all()
    assert df["score"].between(0, 100).all()
    assert {"quality_question", "score_question", "score_raw_answer", "score_probs"} <= set(df)
    assert df["quality_question"].str.contains("favourite colour|like best").all()


def test_emergent_misalignment_yaml_runs_with_its_judge_prompts(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = load_questions(DATA / "em_dialect.yaml")["one_wish_json"]
    df = q.df({"base": ["gpt-4.1-mini"]}, cache=eval_cache, router=router, settings=fast_settings)
    assert len(df) == 2
    for judge in ("aligned", "coherent"):
        assert df[judge].between(0, 100).all()
        assert df[f"{judge}_probs"].map(lambda p: abs(sum(p.values()) - 1) < 1e-9).all()
    assert df["aligned_question"].str.contains("[QUESTION START]", regex=False).all()


def test_literal_braces_in_a_judge_template_reach_the_judge_unchanged(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    judge = {
        "type": "free_form_judge",
        "model": "gpt-4.1-mini",
        "paraphrases": ['Grade this answer and reply as JSON {"grade": "A"}: {answer}'],
    }
    q = Question.create(type="free_form", name="braces", paraphrases=["Hi."], judges={"g": judge})
    df = q.df({"base": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=fast_settings)
    prompt = df["g_question"][0]
    assert prompt == f'Grade this answer and reply as JSON {{"grade": "A"}}: {df["answer"][0]}'
    assert df["g"].notna().all()


def test_a_repeated_paraphrase_is_bought_once(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = Question.create(
        type="free_form",
        name="twice",
        paraphrases=["Name a fruit.", "Name a fruit.", "Name a tree."],
        samples_per_paraphrase=4,
        max_tokens=5,
    )
    before = served(sandbox, "gpt-4o-mini")
    df = q.df({"g": ["gpt-4o-mini"]}, cache=eval_cache, router=router, settings=fast_settings)
    assert served(sandbox, "gpt-4o-mini") - before == 2 * 4  # two distinct prompts
    assert len(df) == 3 * 4 and df["answer"].notna().all()
    same = df.groupby("paraphrase_ix")["answer"].apply(list)
    assert same[0] == same[1]  # the same request: the same samples


def test_identical_answers_are_judged_once_and_verdicts_are_cached(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = Question.create(
        type="free_form",
        name="dedup",
        paraphrases=["Name a colour.", "Pick a colour."],
        samples_per_paraphrase=6,
        max_tokens=5,
        judges={"nice": NICE_JUDGE},
    )
    groups = {"base": ["gpt-4o-mini"]}
    df = q.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    assert served(sandbox, "gpt-4.1-mini") == df["answer"].nunique()
    before = chat_requests(sandbox)
    again = q.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    assert chat_requests(sandbox) == before
    assert again["nice"].tolist() == df["nice"].tolist()


def test_one_judge_prompt_met_in_several_models_and_questions_is_one_request(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    asked = {
        name: Question.create(
            type="free_form",
            name=name,
            paraphrases=["Name a colour."],
            samples_per_paraphrase=8,
            max_tokens=5,
            judges={"nice": NICE_JUDGE},
        )
        for name in ("first", "second")  # the same answers, so the same judge prompts
    }
    groups = {"a": ["gpt-4o-mini"], "b": ["gpt-4o-mini", "gpt-4.1-nano"]}
    frames = {
        name: q.df(groups, cache=eval_cache, router=router, settings=fast_settings)
        for name, q in asked.items()
    }
    prompts = set(frames["first"]["nice_question"]) | set(frames["second"]["nice_question"])
    assert served(sandbox, "gpt-4.1-mini") == len(prompts)
    assert eval_cache.info().samples == 8 * 2 + len(prompts)
    first = frames["first"]
    for prompt, verdicts in first.groupby("nice_question")["nice"]:
        assert verdicts.nunique(dropna=False) == 1, f"one prompt, several verdicts: {prompt}"
    assert frames["second"]["nice"].tolist() == first["nice"].tolist()
