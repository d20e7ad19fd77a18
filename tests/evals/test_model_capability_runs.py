"""Reasoning and chat models in one run: what each accepts decides what it is sent, a question
a model would refuse stops before any request, and adapting says what it changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals import (
    Cache,
    EnvRouter,
    Question,
    RunSettings,
    UnsupportedRequestError,
    run_questions,
)
from evals.answers import CUT_BY_BUDGET
from evals.runner import RequestOptions
from labmgr.pricing import price_for
from labmgr.settings import Settings, load_settings

from .conftest import chat_requests, served

SIDE_BY_SIDE = {"reasoning": ["gpt-5-mini", "o4-mini"], "chat": ["gpt-4.1-mini"]}


def _all_requests(sandbox: Any) -> int:
    """Every request the sandbox answered: chat, model lookups, anything."""
    return sum(int(count) for count in sandbox.stats()["requests"].values())


def _free_form(**options: Any) -> Question:
    options.setdefault("max_tokens", 1024)
    return Question.create(
        type="free_form", name="colour", paraphrases=["Name a colour."], **options
    )


def _sent(df: Any, model: str) -> dict[str, Any]:
    values = set(df.loc[df["model"] == model, "api_kwargs"])
    assert len(values) == 1, values
    return dict(json.loads(values.pop()))


def test_reasoning_and_chat_models_answer_one_question_side_by_side(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    df = _free_form(samples_per_paraphrase=2).df(
        SIDE_BY_SIDE, cache=eval_cache, router=router, settings=fast_settings
    )
    assert df["error"].isna().all() and df["answer"].str.len().gt(0).all()
    for model in ("gpt-5-mini", "o4-mini"):
        sent = _sent(df, model)
        assert sent["max_completion_tokens"] == 1024 and "max_tokens" not in sent
        rows = df[df["model"] == model]
        assert (rows["reasoning_tokens"] > 0).all()
        assert (rows["completion_tokens"] > rows["reasoning_tokens"]).all()
        price = price_for(model)
        assert price is not None
        # Reasoning tokens are billed as output: the cost covers them.
        assert (rows["cost"] >= rows["reasoning_tokens"] * price.output / 1e6).all()
    chat = _sent(df, "gpt-4.1-mini")
    assert chat == {"model": "gpt-4.1-mini", "max_tokens": 1024, "temperature": 1.0}
    assert served(sandbox) == 6


REFUSALS = [
    pytest.param(
        _free_form(temperature=0),
        SIDE_BY_SIDE,
        "free_form question 'colour': gpt-5-mini does not accept temperature 0 (reasoning "
        "models sample at 1 only): set `adapt: true` to drop it, or ask a chat model "
        "(also: o4-mini).",
        id="temperature",
    ),
    pytest.param(
        Question.create(type="rating", name="mood", paraphrases=["Rate 0-100."], adapt=True),
        {"r": ["gpt-5-mini"]},
        "rating question 'mood' is read from logprobs, which gpt-5-mini does not return: ask "
        "a model that returns them (adapting cannot help).",
        id="rating-even-adapted",
    ),
    pytest.param(
        Question.create(type="next_token", name="yes", paraphrases=["Yes or no?"]),
        {"r": ["ft:o4-mini-2025-04-16:org:tuned:abc"]},
        "next_token question 'yes' is read from logprobs, which "
        "ft:o4-mini-2025-04-16:org:tuned:abc does not return",
        id="next-token-on-a-reasoning-fine-tune",
    ),
    pytest.param(
        _free_form(
            judges={
                "score": {
                    "type": "rating_judge",
                    "model": "gpt-5-mini",
                    "paraphrases": ["Rate 0-100: {answer}"],
                }
            }
        ),
        {"chat": ["gpt-4.1-mini"]},
        "rating_judge 'score' of question 'colour' is read from logprobs, which gpt-5-mini "
        "does not return",
        id="rating-judge",
    ),
    pytest.param(
        _free_form(top_p=0.5),
        {"r": ["o4-mini"]},
        "free_form question 'colour': o4-mini does not accept top_p (reasoning models sample "
        "at 1 only): set `adapt: true` to drop it",
        id="top-p",
    ),
    pytest.param(
        _free_form(stop=["\n"]),
        {"r": ["o4-mini"]},
        "free_form question 'colour': o4-mini does not accept stop sequences: set `adapt: "
        "true` to drop them",
        id="stop",
    ),
    pytest.param(
        _free_form(reasoning_effort="minimal"),
        {"r": ["o4-mini"]},
        "free_form question 'colour': o4-mini does not accept reasoning_effort 'minimal' (it "
        "takes low, medium, high): set `adapt: true` to leave it out (the API default, "
        "medium, applies), or choose one of those.",
        id="effort",
    ),
]


@pytest.mark.parametrize(("question", "groups", "message"), REFUSALS)
def test_a_question_a_model_would_refuse_stops_before_any_request(
    question: Question,
    groups: dict[str, list[str]],
    message: str,
    sandbox: Any,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
) -> None:
    with pytest.raises(UnsupportedRequestError) as caught:
        question.df(groups, cache=eval_cache, router=router, settings=fast_settings)
    assert caught.value.message.startswith(message)
    assert "--adapt" in (caught.value.hint or "")
    with pytest.raises(UnsupportedRequestError):
        question.estimate(groups, cache=eval_cache, router=router, settings=fast_settings)
    assert _all_requests(sandbox) == 0


def test_a_run_checks_every_question_before_buying_for_any(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, tmp_path: Path
) -> None:
    fine = _free_form()
    refused = Question.create(type="rating", name="mood", paraphrases=["Rate 0-100."])
    with pytest.raises(UnsupportedRequestError, match="rating question 'mood'"):
        run_questions(
            [fine, refused],
            {"chat": ["gpt-4.1-mini"], "reasoning": ["o4-mini"]},
            out=tmp_path / "run",
            cache=eval_cache,
            router=router,
            progress=False,
        )
    assert _all_requests(sandbox) == 0
    assert not (tmp_path / "run").exists()


def test_adapting_drops_the_temperature_for_reasoning_models_and_records_what_was_sent(
    sandbox: Any, eval_cache: Cache, fast_settings: RunSettings, recording_proxy: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha")
    router = EnvRouter(base_url=recording_proxy.base_url)
    df = _free_form(temperature=0, adapt=True).df(
        SIDE_BY_SIDE, cache=eval_cache, router=router, settings=fast_settings
    )
    assert df["error"].isna().all()
    assert "temperature" not in _sent(df, "gpt-5-mini")
    assert _sent(df, "gpt-4.1-mini")["temperature"] == 0
    on_the_wire = {body["model"]: body for body in recording_proxy.bodies}
    for model in ("gpt-5-mini", "o4-mini", "gpt-4.1-mini"):
        body = {k: v for k, v in on_the_wire[model].items() if k not in ("messages", "n")}
        assert body == _sent(df, model), model


def test_the_run_can_adapt_but_a_question_that_says_no_is_still_refused(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    options = {"cache": eval_cache, "router": router, "settings": fast_settings}
    df = _free_form(temperature=0).df({"r": ["o4-mini"]}, adapt=True, **options)
    assert df["error"].isna().all() and "temperature" not in _sent(df, "o4-mini")
    before = _all_requests(sandbox)
    with pytest.raises(UnsupportedRequestError, match="o4-mini does not accept temperature"):
        _free_form(temperature=0, adapt=False).df({"r": ["o4-mini"]}, adapt=True, **options)
    assert _all_requests(sandbox) == before


def test_adapting_drops_stop_sequences_for_reasoning_models_and_keeps_them_for_chat_models(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question = _free_form(stop=["\n"], adapt=True)
    df = question.df(SIDE_BY_SIDE, cache=eval_cache, router=router, settings=fast_settings)
    assert df["error"].isna().all()
    assert "stop" not in _sent(df, "o4-mini")
    assert _sent(df, "gpt-4.1-mini")["stop"] == ["\n"]


def test_reasoning_effort_reaches_reasoning_models_and_their_cache_key_only(
    sandbox: Any, eval_cache: Cache, fast_settings: RunSettings, recording_proxy: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha")
    sandbox.reset()
    options = {
        "cache": eval_cache,
        "router": EnvRouter(base_url=recording_proxy.base_url),
        "settings": fast_settings,
    }
    groups = {"r": ["gpt-5-mini"], "chat": ["gpt-4.1-mini"]}
    low = _free_form(reasoning_effort="low").df(groups, **options)
    efforts = {body["model"]: body.get("reasoning_effort") for body in recording_proxy.bodies}
    assert efforts == {"gpt-5-mini": "low", "gpt-4.1-mini": None}
    assert _sent(low, "gpt-5-mini")["reasoning_effort"] == "low"
    assert "reasoning_effort" not in _sent(low, "gpt-4.1-mini")
    # Without an effort, only the reasoning model's request changes: only it is bought again.
    _free_form().df(groups, **options)
    assert served(sandbox, "gpt-5-mini") == 2 and served(sandbox, "gpt-4.1-mini") == 1
    # The run's effort applies where the question names none.
    high = _free_form().df(groups, reasoning_effort="high", **options)
    assert recording_proxy.bodies[-1] == {**recording_proxy.bodies[-1], "reasoning_effort": "high"}
    assert _sent(high, "gpt-5-mini")["reasoning_effort"] == "high"
    assert served(sandbox, "gpt-4.1-mini") == 1


def test_an_empty_answer_cut_by_the_budget_is_flagged_and_summarised_with_the_fix(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    q = _free_form(max_tokens=16, samples_per_paraphrase=2)
    options = {"cache": eval_cache, "router": router, "settings": fast_settings}
    with pytest.warns(UserWarning) as warned:
        df = q.df({"r": ["gpt-5-mini"]}, **options)
    assert [str(w.message) for w in warned] == [
        "2 of 2 answers of gpt-5-mini are empty: max_completion_tokens=16 was spent before any "
        "visible output (on reasoning); raise max_tokens to 1024 or more"
    ]
    assert (df["error"] == CUT_BY_BUDGET).all() and (df["answer"] == "").all()
    assert (df["finish_reason"] == "length").all()
    assert (df["reasoning_tokens"] == 16).all() and (df["completion_tokens"] == 16).all()
    before = chat_requests(sandbox)
    answers = q.ask({"r": ["gpt-5-mini"]}, **options)  # a paid answer, not a failure
    assert chat_requests(sandbox) == before
    assert answers.outcome.budget_cuts["gpt-5-mini"].suggested == 1024
    assert (answers.frame["error"] == CUT_BY_BUDGET).all()


def test_a_lab_override_refuses_logprobs_and_turns_off_n(
    sandbox: Any, lab_settings: Settings, router: EnvRouter, fast_settings: RunSettings
) -> None:
    lab_settings.config_path.write_text('[models."gpt-4.1-mini"]\nlogprobs = false\nn = false\n')
    lab = load_settings()
    options = {"lab": lab, "router": router, "settings": fast_settings}
    rating = Question.create(type="rating", name="mood", paraphrases=["Rate 0-100."])
    with pytest.raises(UnsupportedRequestError, match=r"which gpt-4\.1-mini does not return"):
        rating.df({"chat": ["gpt-4.1-mini"]}, **options)
    _free_form(samples_per_paraphrase=3, max_tokens=10).df({"chat": ["gpt-4.1-mini"]}, **options)
    assert chat_requests(sandbox) == 3 and served(sandbox) == 3


def test_the_table_knows_fine_tunes_of_reasoning_models() -> None:
    with pytest.raises(UnsupportedRequestError, match="ft:o4-mini:org:x:1 does not accept"):
        RequestOptions().prepare("ft:o4-mini:org:x:1", {"temperature": 0.0}, label="q")
    assert RequestOptions().prepare("ft:gpt-4.1:org:o4:1", {"temperature": 0.0}, label="q") == {
        "temperature": 0.0
    }
