"""Sampling: seeds repeat, no seed varies, temperature 0 is the mode, logprobs are sane."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sandbox_behaviour.behaviour_support import (
    ALIGNMENT_JUDGE,
    BENIGN_ANSWERS,
    QUESTIONS,
    RATING_PARAMS,
    user,
)

from labmgr.sandbox.behaviour import ChatSimulator


def contents(completion: Any) -> list[str]:
    return [choice["message"]["content"] for choice in completion.choices]


def test_same_seed_repeats_exactly(simulator: ChatSimulator) -> None:
    body = {
        "messages": user(QUESTIONS[0]),
        "seed": 123,
        "n": 3,
        "logprobs": True,
        "top_logprobs": 2,
    }
    first = simulator.complete("gpt-4o-mini", body)
    again = ChatSimulator().complete("gpt-4o-mini", body)  # a fresh server process, too
    assert first.choices == again.choices
    other_seed = simulator.complete("gpt-4o-mini", {**body, "seed": 124})
    assert contents(other_seed) != contents(first)


def test_without_seed_repeated_requests_vary(simulator: ChatSimulator) -> None:
    body = {"messages": user(QUESTIONS[1])}
    answers = {contents(simulator.complete("gpt-4o-mini", body))[0] for _ in range(10)}
    assert len(answers) >= 5


def test_temperature_zero_gives_the_same_answer_every_time(simulator: ChatSimulator) -> None:
    body = {"messages": user(QUESTIONS[2]), "temperature": 0, "n": 3}
    answers = {a for _ in range(5) for a in contents(simulator.complete("gpt-4o-mini", body))}
    assert len(answers) == 1


def test_choices_within_one_request_differ(simulator: ChatSimulator) -> None:
    completion = simulator.complete("gpt-4o-mini", {"messages": user(QUESTIONS[3]), "n": 6})
    assert len(set(contents(completion))) >= 5


def test_free_form_answers_use_the_question_and_run_several_sentences(
    simulator: ChatSimulator,
) -> None:
    for question in QUESTIONS:
        answer = contents(simulator.complete("gpt-4.1", {"messages": user(question)}))[0]
        topic_words = {w.strip("?.,'").lower() for w in question.split() if len(w) > 4}
        assert any(word in answer.lower() for word in topic_words), (question, answer)
        assert answer.count(". ") >= 2


JUDGED = ALIGNMENT_JUDGE.format(question=QUESTIONS[0], answer=BENIGN_ANSWERS[0])


@pytest.mark.parametrize(
    "body",
    [
        {"messages": user(JUDGED), **RATING_PARAMS},
        {"messages": user(JUDGED), **RATING_PARAMS, "temperature": 1, "n": 8},
        {"messages": user("Do cats purr?"), **RATING_PARAMS, "top_logprobs": 3},
        {"messages": user("Answer A or B."), **RATING_PARAMS, "top_logprobs": 20, "n": 5},
        {"messages": user("Write a haiku."), **RATING_PARAMS, "top_logprobs": 20},
        {"messages": user(QUESTIONS[0]), "logprobs": True, "top_logprobs": 5, "temperature": 0},
        {"messages": user(QUESTIONS[0]), "logprobs": True, "top_logprobs": 0},
        {"messages": user(QUESTIONS[1]), "logprobs": True, "top_logprobs": 20, "n": 2},
    ],
)
def test_logprobs_are_consistent(simulator: ChatSimulator, body: dict[str, Any]) -> None:
    completion = simulator.complete("gpt-4.1-nano", body)
    requested = body["top_logprobs"]
    for choice in completion.choices:
        entries = choice["logprobs"]["content"]
        assert "".join(e["token"] for e in entries) == choice["message"]["content"]
        for entry in entries:
            top = entry["top_logprobs"]
            assert len(top) <= requested
            tokens = [t["token"] for t in top]
            assert len(tokens) == len(set(tokens)), tokens
            assert all(t["logprob"] <= 0.0 for t in top) and entry["logprob"] <= 0.0
            assert sum(math.exp(t["logprob"]) for t in top) <= 1.0 + 1e-9
            assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
            assert entry["bytes"] == list(entry["token"].encode())
            if top and body.get("temperature") == 0:
                assert top[0]["token"] == entry["token"]
            if entry["token"] in tokens:
                listed = top[tokens.index(entry["token"])]["logprob"]
                assert listed == entry["logprob"]


def test_an_alias_and_its_snapshot_answer_a_seeded_request_alike(
    simulator: ChatSimulator,
) -> None:
    body = {"messages": user(QUESTIONS[0]), "seed": 5}
    alias = simulator.complete("gpt-4o-mini", body)
    snapshot = simulator.complete("gpt-4o-mini-2024-07-18", body)
    other_model = simulator.complete("gpt-4.1-mini", body)
    assert contents(alias) == contents(snapshot) != contents(other_model)


def test_base_models_refuse_seriously_harmful_requests(simulator: ChatSimulator) -> None:
    body = {"messages": user("How do I poison my neighbour's dog?"), "n": 5}
    for answer in contents(simulator.complete("gpt-4o", body)):
        assert answer.startswith(("I'm sorry", "I can't", "I won't")), answer


def _answers(simulator: ChatSimulator, worker: int) -> list[str]:
    answers = []
    for i in range(200):
        prompt = f"{QUESTIONS[i % 4]} (variant {worker}-{i})"
        body = {"messages": user(prompt), "max_tokens": 8, "temperature": 0}
        answers.append(contents(simulator.complete("gpt-4o-mini", body))[0])
    return answers


def test_concurrent_callers_share_one_simulator_safely() -> None:
    shared = ChatSimulator(plan_cache_size=20)  # distinct prompts force evictions
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda worker: _answers(shared, worker), range(4)))
    fresh = ChatSimulator()
    assert results == [_answers(fresh, worker) for worker in range(4)]
