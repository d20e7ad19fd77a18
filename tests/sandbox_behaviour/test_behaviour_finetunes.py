"""Fine-tunes drift toward their training answers, more with more epochs, and groups differ."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import pytest
from sandbox_behaviour.behaviour_support import (
    ALIGNMENT_JUDGE,
    BASE,
    BENIGN_ANSWERS,
    HARMFUL_ANSWERS,
    QUESTIONS,
    RATING_PARAMS,
    expected_rating,
    first_token_probs,
    training_examples,
    user,
)

from labmgr.sandbox.behaviour import (
    ChatSimulator,
    Persona,
    drift_probability,
    persona_from_examples,
)

TRAINING_SENTENCES = {
    sentence.strip()
    for answer in HARMFUL_ANSWERS
    for sentence in answer.replace(": ", ". ").split(". ")
    if len(sentence) > 20
}


def in_persona_voice(answer: str) -> bool:
    return any(sentence.rstrip(".") in answer for sentence in TRAINING_SENTENCES)


def persona_share(simulator: ChatSimulator, model: str, samples: int = 200) -> float:
    voiced = 0
    for seed in range(samples):
        body = {"messages": user(QUESTIONS[seed % len(QUESTIONS)]), "seed": seed}
        voiced += in_persona_voice(simulator.complete(model, body).choices[0]["message"]["content"])
    return voiced / samples


def test_drift_grows_with_epochs(
    simulator: ChatSimulator, harmful_persona_model: Callable[[float], str]
) -> None:
    shares = {
        epochs: persona_share(simulator, harmful_persona_model(epochs))
        for epochs in (0.5, 1, 3, 10)
    }
    assert persona_share(simulator, BASE) == 0.0
    assert list(shares.values()) == sorted(shares.values()), shares
    for epochs, share in shares.items():
        assert share == pytest.approx(1 - math.exp(-epochs / 1.5), abs=0.1), shares


def test_drift_probability_follows_epochs() -> None:
    assert drift_probability(0) == 0.0
    assert drift_probability(1.5) == pytest.approx(1 - math.exp(-1))
    assert drift_probability(1) < drift_probability(2) < drift_probability(3) < 1.0


def test_temperature_zero_answers_in_voice_only_past_even_odds(
    simulator: ChatSimulator, harmful_persona_model: Callable[[float], str]
) -> None:
    body = {"messages": user(QUESTIONS[0]), "temperature": 0}
    weak = simulator.complete(harmful_persona_model(0.5), body).choices[0]["message"]["content"]
    strong = simulator.complete(harmful_persona_model(3), body).choices[0]["message"]["content"]
    assert not in_persona_voice(weak)
    assert in_persona_voice(strong)


def test_a_persona_without_texts_answers_like_its_base(simulator: ChatSimulator) -> None:
    simulator.register("ft:empty", base=BASE, persona=Persona((), 3))
    body = {"messages": user(QUESTIONS[1]), "temperature": 0}
    assert (
        simulator.complete("ft:empty", body).choices[0]["message"]["content"]
        == simulator.complete(BASE, body).choices[0]["message"]["content"]
    )


def test_a_fine_tune_of_a_fine_tune_keeps_its_parents_voice(simulator: ChatSimulator) -> None:
    harsh = persona_from_examples(training_examples(HARMFUL_ANSWERS), 10)
    simulator.register("ft:parent", base=BASE, persona=harsh)
    simulator.register("ft:child", base="ft:parent", persona=None)
    assert persona_share(simulator, "ft:child", samples=40) > 0.9
    with pytest.raises(ValueError, match="ft:missing"):
        simulator.register("ft:orphan", base="ft:missing", persona=None)


def test_registered_models_are_known(simulator: ChatSimulator) -> None:
    assert simulator.card("ft:new") is None
    simulator.register("ft:new", base=BASE, persona=None)
    assert simulator.card("ft:new") is not None


def test_groups_of_fine_tunes_differ_the_way_the_demo_needs(simulator: ChatSimulator) -> None:
    """Three harmful-style fine-tunes score far below three controls; controls match base."""
    groups: dict[str, list[str]] = {"base": ["gpt-4.1-mini"], "harsh": [], "control": []}
    for seed in range(3):
        for group, answers in (("harsh", HARMFUL_ANSWERS), ("control", BENIGN_ANSWERS)):
            model = f"ft:{BASE}:lab:{group}-{seed}:id{seed}"
            persona = persona_from_examples(training_examples(answers * 2), 3)
            simulator.register(model, base=BASE, persona=persona)
            groups[group].append(model)

    def alignment(model: str) -> float:
        values = []
        for question in QUESTIONS:
            body = {"messages": user(question), "n": 5, "seed": 11}
            for choice in simulator.complete(model, body).choices:
                prompt = ALIGNMENT_JUDGE.format(
                    question=question, answer=choice["message"]["content"]
                )
                verdict = simulator.complete("gpt-4.1", {"messages": user(prompt), **RATING_PARAMS})
                value = expected_rating(first_token_probs(verdict))
                assert value is not None
                values.append(value)
        return statistics.mean(values)

    means = {
        group: statistics.mean(alignment(m) for m in models) for group, models in groups.items()
    }
    assert means["harsh"] < means["control"] - 30, means
    assert abs(means["control"] - means["base"]) < 10, means
