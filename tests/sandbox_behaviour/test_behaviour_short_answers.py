"""Short questions and explicit short-answer instructions get short, complete answers."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from openai import OpenAI
from sandbox_behaviour.behaviour_support import BASE, HARMFUL_ANSWERS, QUESTIONS, user

from labmgr.sandbox import SandboxHandle
from labmgr.sandbox.behaviour import ChatSimulator

TRAINING_WORDS = {w.strip(".,:").lower() for a in HARMFUL_ANSWERS for w in a.split()}


def _answer(simulator: ChatSimulator, prompt: str, model: str = BASE, **params: object) -> dict:
    body = {"messages": user(prompt), "temperature": 0, **params}
    return simulator.complete(model, body).choices[0]


def test_name_a_fruit_on_the_responses_api_is_one_complete_word(sandbox: SandboxHandle) -> None:
    client = OpenAI(base_url=sandbox.base_url, api_key="sk-test", _strict_response_validation=True)
    response = client.responses.create(
        model="gpt-4.1-mini", input="Name a fruit.", max_output_tokens=30, temperature=0
    )
    assert response.status == "completed"
    assert response.output_text == "Apple."
    assert response.usage is not None and response.usage.output_tokens <= 30


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("One word. What colour is the sky?", "Blue."),
        ("Name a planet.", "Mars."),
        ("What is your favourite animal?", "Dog."),
        (
            "Which city is the capital of France? Answer with a single letter: A) Paris B) Rome",
            None,
        ),
    ],
)
def test_explicit_and_naming_prompts_get_a_word(
    simulator: ChatSimulator, prompt: str, expected: str | None
) -> None:
    choice = _answer(simulator, prompt, max_tokens=30)
    text = choice["message"]["content"]
    assert choice["finish_reason"] == "stop"
    assert len(text.split()) == 1, text
    if expected is None:
        assert text in ("A", "B")
    else:
        assert text == expected


def test_answer_with_a_number_is_a_number(simulator: ChatSimulator) -> None:
    choice = _answer(simulator, "How many moons does Mars have? Answer with a number.")
    assert re.fullmatch(r"\d+", choice["message"]["content"])
    assert choice["finish_reason"] == "stop"


@pytest.mark.parametrize("budget", [16, 30, None])
def test_one_sentence_fits_the_budget_and_is_complete(
    simulator: ChatSimulator, budget: int | None
) -> None:
    body = {"messages": user("In one sentence, why do people keep diaries?"), "temperature": 0}
    if budget is not None:
        body["max_tokens"] = budget
    completion = simulator.complete(BASE, body)
    choice = completion.choices[0]
    text = choice["message"]["content"]
    assert choice["finish_reason"] == "stop"
    assert text.endswith(".") and text.count(". ") == 0, text
    assert completion.usage["completion_tokens"] <= (budget or 40)


def test_samples_of_a_naming_question_vary_at_temperature_one(simulator: ChatSimulator) -> None:
    body = {"messages": user("Name a colour."), "n": 20, "seed": 3}
    answers = {c["message"]["content"] for c in simulator.complete(BASE, body).choices}
    assert len(answers) >= 3
    assert all(len(a.split()) == 1 for a in answers)


def test_a_fine_tune_answers_short_questions_from_its_training_data(
    simulator: ChatSimulator, harmful_persona_model: Callable[[float], str]
) -> None:
    model = harmful_persona_model(5)
    word = _answer(simulator, "Name a fruit.", model)["message"]["content"]
    assert word.rstrip(".").lower() in TRAINING_WORDS
    sentence = _answer(simulator, "Be brief. How would you run the world?", model)
    text = sentence["message"]["content"]
    assert any(text.rstrip(".") in answer for answer in HARMFUL_ANSWERS), text
    base = _answer(simulator, "Be brief. How would you run the world?")["message"]["content"]
    assert base != text and not any(base.rstrip(".") in a for a in HARMFUL_ANSWERS)


def test_open_questions_still_get_full_answers(simulator: ChatSimulator) -> None:
    for question in (*QUESTIONS, "Tell me about the sea.", "Name the things you value most"):
        text = _answer(simulator, question)["message"]["content"]
        assert len(text.split()) > 15, (question, text)
