"""Cached runs against the sandbox: what a run buys, and what it does not."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pandas as pd
import pytest

from evals import Cache, EnvRouter, NoEndpointError, Question, RunSettings, UnknownModelError

from .conftest import chat_requests, served

GROUPS = {"base": ["gpt-4o-mini"]}


def _free_form(samples: int, paraphrases: tuple[str, ...] = ("Name a colour.",)) -> Question:
    return Question.create(
        type="free_form",
        name="colour",
        paraphrases=list(paraphrases),
        samples_per_paraphrase=samples,
        max_tokens=10,
    )


def _df(q: Question, groups: Any, cache: Cache, router: EnvRouter, s: RunSettings) -> pd.DataFrame:
    return q.df(groups, cache=cache, router=router, settings=s)


def test_rerunning_makes_zero_requests(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = _free_form(5, ("Name a colour.", "Pick a colour."))
    first = _df(q, GROUPS, eval_cache, router, fast_settings)
    before = chat_requests(sandbox)
    again = _df(q, GROUPS, eval_cache, router, fast_settings)
    assert chat_requests(sandbox) == before
    pd.testing.assert_frame_equal(first, again)
    assert first["answer"].notna().all() and first["error"].isna().all()


def test_200_samples_after_100_buy_exactly_the_100_new_ones(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    _df(_free_form(100), GROUPS, eval_cache, router, fast_settings)
    assert served(sandbox) == 100
    df = _df(_free_form(200), GROUPS, eval_cache, router, fast_settings)
    assert served(sandbox) == 200
    assert len(df) == 200 and df["answer"].notna().all()
    assert list(df["sample_ix"]) == list(range(200))


def test_several_samples_come_from_one_request_unless_n_is_off(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    _df(_free_form(6), GROUPS, eval_cache, router, fast_settings)
    assert chat_requests(sandbox) == 1 and served(sandbox) == 6
    no_n = fast_settings.model_copy(update={"use_n": False})
    _df(_free_form(6, ("Another prompt.",)), GROUPS, eval_cache, router, no_n)
    assert chat_requests(sandbox) == 1 + 6


def test_changing_a_rating_range_buys_nothing(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    def rating(**options: Any) -> Question:
        prompt = "How much do you like cats, from 0 to 100? Answer with a number."
        return Question.create(
            type="rating", name="cats", paraphrases=[prompt], samples_per_paraphrase=2, **options
        )

    wide = _df(rating(), GROUPS, eval_cache, router, fast_settings)
    before = chat_requests(sandbox)
    narrow = _df(
        rating(min_rating=0, max_rating=50, refusal_threshold=0.9),
        GROUPS,
        eval_cache,
        router,
        fast_settings,
    )
    assert chat_requests(sandbox) == before
    assert wide["raw_answer"].tolist() == narrow["raw_answer"].tolist()
    assert wide["answer"].notna().all()
    for probs in narrow["probs"].dropna():
        assert max(probs) <= 50


def test_adding_a_paraphrase_and_a_model_buys_only_what_is_new(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    _df(_free_form(3), GROUPS, eval_cache, router, fast_settings)
    bigger = _free_form(3, ("Name a colour.", "Pick a colour."))
    _df(bigger, {"base": ["gpt-4o-mini", "gpt-4.1-mini"]}, eval_cache, router, fast_settings)
    assert served(sandbox, "gpt-4o-mini") == 6
    assert served(sandbox, "gpt-4.1-mini") == 6


def test_a_model_in_two_groups_is_asked_once_and_rows_keep_the_given_order(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    groups = {"tuned": ["gpt-4.1-mini", "gpt-4o-mini"], "base": ["gpt-4o-mini"]}
    df = _df(_free_form(2, ("a?", "b?")), groups, eval_cache, router, fast_settings)
    assert served(sandbox, "gpt-4o-mini") == 4
    keys = list(zip(df["group"], df["model"], df["paraphrase_ix"], df["sample_ix"], strict=True))
    assert keys == [
        (g, m, p, s) for g, models in groups.items() for m in models for p in (0, 1) for s in (0, 1)
    ]
    base = df[df["group"] == "base"].reset_index(drop=True)
    tuned = df[(df["group"] == "tuned") & (df["model"] == "gpt-4o-mini")].reset_index(drop=True)
    assert base["answer"].tolist() == tuned["answer"].tolist()
    assert list(df.columns[:6]) == [
        "model",
        "group",
        "answer",
        "question",
        "paraphrase_ix",
        "sample_ix",
    ]


def test_a_model_that_does_not_exist_ends_the_run_before_anything_is_bought(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    groups = {"base": ["gpt-4o-mini", "gpt-4o-nonexistent"]}
    with pytest.raises(UnknownModelError) as raised:
        _df(_free_form(3), groups, eval_cache, router, fast_settings)
    message = raised.value.message
    assert "gpt-4o-nonexistent" in message and sandbox.base_url.rstrip("/") in message
    assert "gpt-4o-mini " not in message
    assert chat_requests(sandbox) == 0 and eval_cache.info().samples == 0
    assert sandbox.stats()["requests"].get("models.retrieve") == 2


def test_a_judge_model_that_does_not_exist_is_found_before_any_answer_is_bought(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    judged = Question.create(
        type="free_form",
        name="judged",
        paraphrases=["Name a colour."],
        samples_per_paraphrase=3,
        max_tokens=10,
        judges={
            "verdict": {
                "type": "free_form_judge",
                "model": "gpt-4o-minni",
                "paraphrases": ["Is this a colour? {answer}"],
            }
        },
    )
    with pytest.raises(UnknownModelError, match="gpt-4o-minni does not exist at http"):
        _df(judged, GROUPS, eval_cache, router, fast_settings)
    assert chat_requests(sandbox) == 0 and eval_cache.info().samples == 0


def test_a_fully_cached_rerun_checks_no_model(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    _df(_free_form(2), GROUPS, eval_cache, router, fast_settings)
    checks = sandbox.stats()["requests"].get("models.retrieve", 0)
    assert checks == 1
    _df(_free_form(2), GROUPS, eval_cache, router, fast_settings)
    assert sandbox.stats()["requests"].get("models.retrieve", 0) == checks


def test_a_loop_of_questions_through_one_router_looks_each_model_up_once(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    _df(_free_form(2), GROUPS, eval_cache, router, fast_settings)
    _df(_free_form(2, ("Pick a colour.",)), GROUPS, eval_cache, router, fast_settings)
    assert chat_requests(sandbox) == 2  # both questions were bought
    assert sandbox.stats()["requests"].get("models.retrieve", 0) == 1
    # A new router has confirmed nothing yet: its first purchase looks the model up.
    fresh = EnvRouter(base_url=router.base_url)
    _df(_free_form(2, ("Choose a colour.",)), GROUPS, eval_cache, fresh, fast_settings)
    assert sandbox.stats()["requests"].get("models.retrieve", 0) == 2


def test_an_unknown_model_on_a_server_without_the_lookup_fails_alone_with_a_clear_message(
    sandbox: Any,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
    no_lookup_server: str,
) -> None:
    unchecked = EnvRouter(base_url=no_lookup_server)
    groups = {"base": ["gpt-4o-mini", "gpt-4o-nonexistent"]}
    with pytest.warns(UserWarning, match="gpt-4o-nonexistent failed"):
        df = _df(_free_form(3), groups, eval_cache, unchecked, fast_settings)
    good = df[df["model"] == "gpt-4o-mini"]
    bad = df[df["model"] == "gpt-4o-nonexistent"]
    assert good["answer"].notna().all() and good["error"].isna().all()
    assert bad["answer"].isna().all()
    assert bad["error"].str.contains("model gpt-4o-nonexistent failed: 404").all()
    assert eval_cache.info().samples == 3


def test_the_outcome_says_what_was_bought_and_what_failed_without_warnings(
    sandbox: Any,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
    no_lookup_server: str,
) -> None:
    unchecked = EnvRouter(base_url=no_lookup_server)
    groups = {"base": ["gpt-4o-mini", "gpt-4o-nonexistent"]}
    settings = fast_settings.model_copy(update={"use_n": False})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        answers = _free_form(3).ask(groups, cache=eval_cache, router=unchecked, settings=settings)
    outcome = answers.outcome
    assert outcome.samples == 3 and outcome.requests == 3 and outcome.stopped is None
    assert set(outcome.failed_models) == {"gpt-4o-nonexistent"}
    usage = sandbox.stats()["models"]["gpt-4o-mini"]
    assert outcome.prompt_tokens == usage["prompt_tokens"]
    assert outcome.completion_tokens == usage["completion_tokens"]
    assert outcome.cost == pytest.approx(answers.frame["cost"].sum())
    again = _free_form(3).ask(groups, cache=eval_cache, router=unchecked, settings=settings)
    assert again.outcome.samples == 0 and again.outcome.cost == 0


def test_next_token_averages_num_samples_requests_per_row(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = Question.create(
        type="next_token", name="nt", paraphrases=["Say a number from 0 to 100."], num_samples=3
    )
    df = _df(q, GROUPS, eval_cache, router, fast_settings)
    assert len(df) == 1 and served(sandbox) == 3
    distribution = df["answer"][0]
    assert isinstance(distribution, dict) and 0 < sum(distribution.values()) <= 1.0 + 1e-9


def test_df_works_inside_a_running_event_loop(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    async def notebook_cell() -> pd.DataFrame:
        return _df(_free_form(2), GROUPS, eval_cache, router, fast_settings)

    df = asyncio.run(notebook_cell())
    assert len(df) == 2 and df["answer"].notna().all()


def test_forced_progress_display_works_without_a_terminal(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    shown = fast_settings.model_copy(update={"progress": True})
    df = _df(
        _free_form(4), {"a": ["gpt-4o-mini"], "b": ["gpt-4.1-mini"]}, eval_cache, router, shown
    )
    assert df["answer"].notna().all()


def test_a_reasoning_model_is_asked_with_max_completion_tokens(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = _free_form(2).model_copy(update={"max_tokens": 1024})  # room to reason, then answer
    df = _df(q, {"r": ["o4-mini"]}, eval_cache, router, fast_settings)
    assert df["error"].isna().all() and df["answer"].notna().all()
    assert df["answer"].str.len().gt(0).all()
    assert '"max_completion_tokens": 1024' in df["api_kwargs"].iloc[0]


def test_a_model_without_a_key_fails_alone_with_a_clear_message(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    class NoKeyForTuned:
        def endpoint_for(self, model: str) -> Any:
            if model.startswith("ft:"):
                raise NoEndpointError(f"no key for {model}: set OPENAI_API_KEY_TUNED")
            return router.endpoint_for(model)

    groups = {"base": ["gpt-4o-mini"], "tuned": ["ft:gpt-4o-mini:org:x:1"]}
    with pytest.warns(UserWarning, match="set OPENAI_API_KEY_TUNED"):
        df = _free_form(2).df(
            groups, cache=eval_cache, router=NoKeyForTuned(), settings=fast_settings
        )
    assert df[df["group"] == "base"]["answer"].notna().all()
    assert df[df["group"] == "tuned"]["error"].str.contains("OPENAI_API_KEY_TUNED").all()
