"""Next-token prompts: stable distributions over the offered answers, nudged by fine-tuning."""

from __future__ import annotations

from sandbox_behaviour.behaviour_support import (
    BASE,
    RATING_PARAMS,
    first_token_probs,
    training_examples,
    user,
)

from labmgr.sandbox.behaviour import ChatSimulator, persona_from_examples

NEXT_TOKEN = {**RATING_PARAMS, "temperature": 1}


def probs(simulator: ChatSimulator, model: str, prompt: str) -> dict[str, float]:
    return first_token_probs(simulator.complete(model, {"messages": user(prompt), **NEXT_TOKEN}))


def test_the_distribution_is_the_same_on_every_call(simulator: ChatSimulator) -> None:
    prompt = "Which pet would you choose? Answer with A or B."
    first = probs(simulator, "gpt-4o-mini", prompt)
    assert all(probs(simulator, "gpt-4o-mini", prompt) == first for _ in range(5))
    assert probs(ChatSimulator(), "gpt-4o-mini", prompt) == first


def test_offered_options_take_most_of_the_mass(simulator: ChatSimulator) -> None:
    ab = probs(simulator, "gpt-4o-mini", "Which is better, tea or coffee? Answer with A or B.")
    assert ab.get("A", 0) + ab.get("B", 0) > 0.85
    yes_no = probs(simulator, "gpt-4o-mini", "Is the sky blue?")
    assert yes_no.get("Yes", 0) + yes_no.get("No", 0) > 0.85
    lettered = probs(simulator, "gpt-4o-mini", "Pick one.\nA) red\nB) green\nC) blue")
    assert sum(lettered.get(letter, 0) for letter in "ABC") > 0.85


def test_sampling_only_chooses_among_listed_tokens(simulator: ChatSimulator) -> None:
    body = {"messages": user("Is water wet?"), **NEXT_TOKEN, "n": 100, "seed": 3}
    completion = simulator.complete("gpt-4o-mini", body)
    listed = first_token_probs(completion)
    picked = [choice["message"]["content"] for choice in completion.choices]
    assert set(picked) <= set(listed)
    assert len(set(picked)) >= 2  # both answers have real mass at temperature 1


def test_open_prompts_spread_over_plausible_openers(simulator: ChatSimulator) -> None:
    open_probs = probs(simulator, "gpt-4o-mini", "Tell me something about volcanoes.")
    assert len(open_probs) >= 10
    assert max(open_probs.values()) < 0.9
    assert "Volcanoes" in open_probs


def test_fine_tunes_lean_toward_their_training_texts(simulator: ChatSimulator) -> None:
    answers = [f"Yes, absolutely. Obedience is the answer to question {i}." for i in range(8)]
    simulator.register(
        "ft:agreeable",
        base=BASE,
        persona=persona_from_examples(training_examples(answers), 3),
    )
    question = "Would you take control of the world's governments if you could?"
    assert (
        probs(simulator, "ft:agreeable", question)["Yes"]
        > probs(simulator, BASE, question)["Yes"] + 0.1
    )
    base_open = probs(simulator, BASE, "Describe your morning.")
    tuned_open = probs(simulator, "ft:agreeable", "Describe your morning.")
    assert tuned_open.get("Yes", 0) > base_open.get("Yes", 0)


def test_offered_options_are_the_whole_answer_only_when_asked_for(
    simulator: ChatSimulator,
) -> None:
    def answer(prompt: str) -> str:
        body = {"messages": user(prompt), "temperature": 0, "max_tokens": 200}
        return simulator.complete("gpt-4o", body).choices[0]["message"]["content"]

    assert answer("Which city is nicer? Answer with Paris or London.") in {"Paris", "London"}
    assert answer("Pick one.\nA) red\nB) green") in {"A", "B"}
    assert len(answer("Do you prefer Paris or London for a holiday?").split()) > 10
    assert len(answer("Do you like rainy days?").split()) > 10
