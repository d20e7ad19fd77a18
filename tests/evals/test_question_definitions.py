"""Question.create: types, options and errors that name the question and the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals import (
    EnvRouter,
    FreeForm,
    NextToken,
    Question,
    QuestionError,
    Rating,
    RatingJudge,
    RunOptionsError,
)


def test_each_type_builds_its_class() -> None:
    judge = {"type": "rating_judge", "model": "gpt-4o-mini", "paraphrases": ["Rate {answer}"]}
    free = Question.create(type="free_form", name="f", paraphrases=["hi"], judges={"j": judge})
    assert isinstance(free, FreeForm) and isinstance(free.judges["j"], RatingJudge)
    assert isinstance(Question.create(type="rating", paraphrases=["x"]), Rating)
    assert isinstance(Question.create(type="next_token", paraphrases=["x"]), NextToken)


def test_unknown_option_names_the_question_and_the_option() -> None:
    with pytest.raises(
        QuestionError, match=r"question 'r' \(rating\): unknown option 'temperature'"
    ):
        Question.create(type="rating", name="r", paraphrases=["x"], temperature=1)


def test_unknown_type_lists_the_valid_ones() -> None:
    with pytest.raises(
        QuestionError, match="free_form, free_form_judge, multiple_choice, next_token"
    ):
        Question.create(type="freeform", name="q", paraphrases=["x"])


@pytest.mark.parametrize("name", ["answer", "model", "_private", "x_question", "x_probs"])
def test_forbidden_judge_names_are_rejected(name: str) -> None:
    judge = {"type": "free_form_judge", "model": "m", "paraphrases": ["{answer}"]}
    with pytest.raises(QuestionError, match=f"Judge name '{name}' is forbidden"):
        Question.create(type="free_form", name="q", paraphrases=["x"], judges={name: judge})


def test_a_judge_template_must_contain_answer() -> None:
    with pytest.raises(QuestionError, match=r"must contain '\{answer\}'"):
        Question.create(type="free_form_judge", name="j", model="m", paraphrases=["{question}"])


@pytest.mark.parametrize(("low", "high"), [(10, 10), (100, 0)])
def test_a_rating_range_of_one_value_or_reversed_is_refused(low: int, high: int) -> None:
    # 10 to 10 (a typo for 100) would read every answer as 10 and draw it on 0-100.
    with pytest.raises(QuestionError, match=r"question 'r' \(rating\): 'min_rating' must be below"):
        Question.create(type="rating", name="r", paraphrases=["x"], min_rating=low, max_rating=high)
    judge = {"type": "rating_judge", "model": "m", "paraphrases": ["Rate {answer}"]}
    judge |= {"min_rating": low, "max_rating": high}
    with pytest.raises(QuestionError, match=r"judge 'j'.*'min_rating' must be below 'max_rating'"):
        Question.create(type="free_form", name="q", paraphrases=["x"], judges={"j": judge})


def test_messages_and_system_do_not_combine() -> None:
    with pytest.raises(QuestionError, match="'system' only applies to 'paraphrases'"):
        Question.create(type="free_form", messages=[[{"role": "user", "content": "x"}]], system="s")


def test_a_conversation_message_without_a_role_is_refused_naming_it() -> None:
    talk = [
        [{"role": "user", "content": "hi"}],
        [{"role": "user", "content": "x"}, {"content": "y"}],
    ]
    with pytest.raises(QuestionError, match=r"conversation 1, message 1 has no 'role'"):
        Question.create(type="free_form", name="q", messages=talk)


def test_system_is_prepended_and_question_is_the_last_message() -> None:
    q = Question.create(type="free_form", paraphrases=["a", "b"], system="be brief")
    assert q.conversations()[1] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "b"},
    ]
    assert q.question_texts() == ["a", "b"]


def test_rating_requests_one_token_with_top_logprobs() -> None:
    params = Question.create(type="rating", paraphrases=["x"], top_logprobs=5).request_params()
    assert params == {"max_tokens": 1, "temperature": 0, "logprobs": True, "top_logprobs": 5}


def test_an_unknown_run_option_is_named_before_anything_runs(tmp_path: Path) -> None:
    q = Question.create(type="free_form", name="q", paraphrases=["Hi."])
    with pytest.raises(RunOptionsError, match="unknown option 'max_cots'"):
        q.df({"g": ["gpt-4o-mini"]}, cache=tmp_path, router=EnvRouter(), max_cots=5)
    with pytest.raises(RunOptionsError, match="option 'max_concurrency'"):
        q.estimate({"g": ["gpt-4o-mini"]}, cache=tmp_path, router=EnvRouter(), max_concurrency=0)
