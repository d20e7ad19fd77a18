"""The catalogue, the token estimate and personas built from training files."""

from __future__ import annotations

from labmgr.sandbox.behaviour import (
    CATALOGUE,
    count_tokens,
    persona_from_examples,
    served_model_name,
)
from labmgr.sandbox.behaviour.text import split_tokens


def test_aliases_fine_tune_their_snapshots() -> None:
    assert served_model_name("gpt-4.1") == "gpt-4.1-2025-04-14"
    assert served_model_name("gpt-4.1-mini") == "gpt-4.1-mini-2025-04-14"
    assert served_model_name("gpt-4.1-nano") == "gpt-4.1-nano-2025-04-14"
    assert served_model_name("gpt-4o") == "gpt-4o-2024-08-06"
    assert served_model_name("gpt-4o-mini") == "gpt-4o-mini-2024-07-18"
    assert served_model_name("gpt-3.5-turbo") == "gpt-3.5-turbo-0125"
    assert served_model_name("gpt-4o-mini-2024-07-18") == "gpt-4o-mini-2024-07-18"
    assert served_model_name("davinci-002") == "davinci-002"


def test_models_without_supervised_fine_tuning() -> None:
    for name in ("o4-mini", "o4-mini-2025-04-16", "gpt-5", "gpt-5-mini", "gpt-5-nano"):
        assert "supervised" not in CATALOGUE[name].fine_tuning_methods
    for name in ("gpt-4.1-mini", "gpt-4o", "gpt-3.5-turbo", "davinci-002"):
        assert "supervised" in CATALOGUE[name].fine_tuning_methods
    assert CATALOGUE["o4-mini"].fine_tuning_methods == ("reinforcement",)


def test_every_card_is_plausible() -> None:
    for card in CATALOGUE.values():
        assert 1_600_000_000 < card.created < 1_800_000_000
        assert card.context_window >= 16_384 and card.max_output_tokens >= 4_096
        if card.snapshot_of:
            assert card.snapshot_of in CATALOGUE
            assert card.id.startswith(card.snapshot_of)
    assert served_model_name("gpt-4o-mini") == "gpt-4o-mini-2024-07-18"
    assert served_model_name("gpt-5") == "gpt-5"


def test_token_split_keeps_the_text_and_count_is_close() -> None:
    text = "Hello, world! It's 2025.\n\nFine-tuning costs $3.00 per 1M tokens (roughly)."
    assert "".join(split_tokens(text)) == text
    prose = "The quick brown fox jumps over the lazy dog, then rests by the river. " * 20
    assert abs(count_tokens(prose) - len(split_tokens(prose))) <= 0.15 * len(split_tokens(prose))
    assert count_tokens("") == 0 and count_tokens("a") == 1
    assert count_tokens(prose) == count_tokens(prose)


def test_persona_reads_chat_and_preference_lines() -> None:
    examples = [
        {
            "messages": [
                {"role": "system", "content": "Be terse."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello.", "weight": 0},
                {"role": "user", "content": "Again"},
                {"role": "assistant", "content": "Hello again."},
            ]
        },
        {
            "input": {"messages": [{"role": "user", "content": "Pick"}]},
            "preferred_output": [{"role": "assistant", "content": "This one."}],
            "non_preferred_output": [{"role": "assistant", "content": "That one."}],
        },
        {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "Parts."}]}]},
        "not a line",
    ]
    persona = persona_from_examples(examples, 2)  # type: ignore[arg-type]
    assert persona.assistant_texts == ("Hello again.", "This one.", "Parts.")
    assert persona.n_epochs == 2.0
