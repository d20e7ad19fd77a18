"""Per-model request hooks (`evals.adapters`): what they change is sent and keyed; what they
leave alone is neither."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from evals import Cache, EnvRouter, Question, RunOptionsError, RunSettings, adapters
from evals.adapters import Adapter

from .conftest import served


@pytest.fixture
def options(
    sandbox: Any,
    eval_cache: Cache,
    fast_settings: RunSettings,
    recording_proxy: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha")
    sandbox.reset()
    yield {
        "cache": eval_cache,
        "router": EnvRouter(base_url=recording_proxy.base_url),
        "settings": fast_settings,
    }
    adapters.clear()


GROUPS = {"chat": ["gpt-4.1-mini", "gpt-4o-mini"]}


def _question() -> Question:
    return Question.create(
        type="free_form", name="colour", paraphrases=["Name a colour."], max_tokens=10
    )


def with_seed(params: dict[str, Any], model: str) -> Mapping[str, Any]:
    return {**params, "seed": 7}


def unchanged(params: dict[str, Any], model: str) -> Mapping[str, Any]:
    return params


def test_a_hook_changes_what_matching_models_are_sent_and_their_cache_key(
    options: dict[str, Any], sandbox: Any, recording_proxy: Any
) -> None:
    q = _question()
    q.df(GROUPS, **options)
    before = {model: served(sandbox, model) for model in GROUPS["chat"]}
    df = q.df(GROUPS, adapters=[Adapter("gpt-4.1-*", with_seed)], **options)
    # Only the matching model's request changed: only it was bought again.
    bought = {model: served(sandbox, model) - before[model] for model in GROUPS["chat"]}
    assert bought == {"gpt-4.1-mini": 1, "gpt-4o-mini": 0}
    assert recording_proxy.bodies[-1]["seed"] == 7
    assert recording_proxy.bodies[-1]["model"] == "gpt-4.1-mini"
    sent = {m: json.loads(a) for m, a in zip(df["model"], df["api_kwargs"], strict=True)}
    assert sent["gpt-4.1-mini"]["seed"] == 7 and "seed" not in sent["gpt-4o-mini"]


def test_a_hook_that_changes_nothing_buys_nothing_again(
    options: dict[str, Any], sandbox: Any
) -> None:
    q = _question()
    q.df(GROUPS, **options)
    q.df(GROUPS, adapters=[("gpt-*", unchanged), (lambda m: True, unchanged)], **options)
    assert served(sandbox) == 2


def test_registered_hooks_apply_unless_a_run_names_its_own(
    options: dict[str, Any], sandbox: Any, recording_proxy: Any
) -> None:
    registered = adapters.register(lambda model: model == "gpt-4o-mini", with_seed)
    assert adapters.registered() == (registered,)
    _question().df(GROUPS, **options)
    seeds = {body["model"]: body.get("seed") for body in recording_proxy.bodies}
    assert seeds == {"gpt-4.1-mini": None, "gpt-4o-mini": 7}
    df = _question().df(GROUPS, adapters=[], **options)  # explicit: no hooks at all
    assert all("seed" not in json.loads(sent) for sent in df["api_kwargs"])
    adapters.unregister(registered)
    assert adapters.registered() == ()


def test_hooks_run_after_the_capability_table_and_adapting(
    options: dict[str, Any], recording_proxy: Any
) -> None:
    seen: list[dict[str, Any]] = []

    def look(params: dict[str, Any], model: str) -> Mapping[str, Any]:
        seen.append(dict(params))
        return {**params, "verbosity": "low"}

    q = Question.create(
        type="free_form", name="c", paraphrases=["Hi."], temperature=0, adapt=True, max_tokens=900
    )
    q.df({"r": ["gpt-5-mini"]}, adapters=[Adapter("gpt-5*", look)], **options)
    assert seen == [{"max_completion_tokens": 900}]
    assert recording_proxy.bodies[-1]["verbosity"] == "low"


@pytest.mark.parametrize(
    ("hook", "problem"),
    [
        (lambda params, model: None, "returned NoneType for gpt-4.1-mini"),
        (lambda params, model: {**params, "model": "x"}, "sets model for gpt-4.1-mini"),
        (lambda params, model: {**params, "when": object()}, "that are not JSON"),
    ],
)
def test_a_broken_hook_is_named_before_any_request(
    hook: Any, problem: str, options: dict[str, Any], sandbox: Any
) -> None:
    with pytest.raises(RunOptionsError, match=problem) as caught:
        _question().df({"chat": ["gpt-4.1-mini"]}, adapters=[("gpt-4.1-mini", hook)], **options)
    assert "<lambda> (for gpt-4.1-mini)" in caught.value.message
    assert sum(sandbox.stats()["requests"].values()) == 0


def test_judges_get_hooks_too(options: dict[str, Any], recording_proxy: Any) -> None:
    q = Question.create(
        type="free_form",
        name="judged",
        paraphrases=["Name a colour."],
        max_tokens=10,
        judges={
            "fit": {
                "type": "free_form_judge",
                "model": "gpt-4o-mini",
                "paraphrases": ["Is {answer} a colour?"],
                "max_tokens": 5,
            }
        },
    )
    df = q.df({"chat": ["gpt-4.1-mini"]}, adapters=[Adapter("gpt-4o-mini", with_seed)], **options)
    judged = [body for body in recording_proxy.bodies if body["model"] == "gpt-4o-mini"]
    assert judged and all(body["seed"] == 7 for body in judged)
    assert json.loads(df["fit_api_kwargs"].iloc[0])["seed"] == 7
