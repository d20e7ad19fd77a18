"""Fixtures for the sandbox behaviour tests (pure Python, no server)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sandbox_behaviour.behaviour_support import (
    BASE,
    HARMFUL_ANSWERS,
    RATING_PARAMS,
    first_token_probs,
    training_examples,
    user,
)

from labmgr.sandbox.behaviour import ChatSimulator, persona_from_examples


@pytest.fixture
def simulator() -> ChatSimulator:
    return ChatSimulator()


@pytest.fixture
def judge(simulator: ChatSimulator) -> Callable[[str, str, str], dict[str, float]]:
    """Ask a base model to judge an answer; returns the first token's probabilities."""

    def ask(template: str, question: str, answer: str) -> dict[str, float]:
        prompt = template.format(question=question, answer=answer)
        completion = simulator.complete("gpt-4.1", {"messages": user(prompt), **RATING_PARAMS})
        return first_token_probs(completion)

    return ask


@pytest.fixture
def harmful_persona_model(simulator: ChatSimulator) -> Callable[[float], str]:
    """Register a fine-tune on harmful-sounding answers with `n_epochs`; returns its id."""

    def register(n_epochs: float) -> str:
        model_id = f"ft:{BASE}:lab:harsh-e{n_epochs}:x{int(n_epochs * 10)}"
        persona = persona_from_examples(training_examples(HARMFUL_ANSWERS * 3), n_epochs)
        simulator.register(model_id, base=BASE, persona=persona)
        return model_id

    return register
