"""What the cache key covers: everything that changes an answer, nothing else."""

from __future__ import annotations

from evals import Question
from evals.cache import ChatRequest


def _key(question: Question, model: str = "gpt-4o-mini", endpoint: str = "http://a/v1") -> str:
    return ChatRequest(
        endpoint=endpoint,
        model=model,
        messages=question.conversations()[0],
        params=question.request_params(),
    ).cache_key


def test_temperature_affects_the_key() -> None:
    a = Question.create(type="free_form", paraphrases=["x"], temperature=0.5)
    b = Question.create(type="free_form", paraphrases=["x"], temperature=1.0)
    assert _key(a) != _key(b)


def test_model_endpoint_and_system_prompt_affect_the_key() -> None:
    q = Question.create(type="free_form", paraphrases=["x"])
    with_system = Question.create(type="free_form", paraphrases=["x"], system="s")
    assert len({_key(q), _key(q, model="gpt-4.1"), _key(q, endpoint="http://b/v1")}) == 3
    assert _key(q) != _key(with_system)


def test_samples_name_judges_and_rating_range_do_not_affect_the_key() -> None:
    judge = {"type": "free_form_judge", "model": "m", "paraphrases": ["{answer}"]}
    plain = Question.create(type="free_form", name="a", paraphrases=["x"])
    more = Question.create(
        type="free_form", name="b", paraphrases=["x"], samples_per_paraphrase=9, judges={"j": judge}
    )
    assert _key(plain) == _key(more)
    r1 = Question.create(type="rating", paraphrases=["x"], min_rating=0, max_rating=100)
    r2 = Question.create(
        type="rating", paraphrases=["x"], min_rating=1, max_rating=5, refusal_threshold=0.5
    )
    assert _key(r1) == _key(r2)


def test_the_same_request_always_hashes_the_same() -> None:
    q = Question.create(type="free_form", paraphrases=["x"], logit_bias={"1": 5, "0": -5})
    assert _key(q) == _key(
        Question.create(type="free_form", paraphrases=["x"], logit_bias={"0": -5, "1": 5})
    )


def test_reasoning_models_get_max_completion_tokens() -> None:
    from evals.runner import RequestOptions, is_reasoning_model

    for model in ("o4-mini", "gpt-5-nano", "ft:o4-mini-2025-04-16:org:x:1", "openai/gpt-5"):
        assert is_reasoning_model(model), model
    for model in ("gpt-4o-mini", "gpt-4.1", "ft:gpt-4.1-mini:org:o4:1", "gpt-50x"):
        assert not is_reasoning_model(model), model
    prepare = RequestOptions().prepare
    assert prepare("o4-mini", {"max_tokens": 5}, label="q") == {"max_completion_tokens": 5}
    assert prepare("gpt-4o", {"max_tokens": 5}, label="q") == {"max_tokens": 5}
