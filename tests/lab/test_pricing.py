"""Prices by model id: bases, dated snapshots, ft: ids and checkpoints, and lab overrides."""

from __future__ import annotations

import pytest

from labmgr.pricing import Price, base_of, cost, price_for, training_cost


def test_dated_snapshot_costs_what_its_family_costs() -> None:
    assert price_for("gpt-4.1-mini-2025-04-14") == price_for("gpt-4.1-mini")
    assert price_for("gpt-4.1-mini") == Price(input=0.4, cached_input=0.1, output=1.6, training=5.0)


def test_a_snapshot_with_its_own_price_keeps_it() -> None:
    old = price_for("gpt-4o-2024-05-13")
    assert old is not None and old.input == 5.0
    assert price_for("gpt-4o-2024-08-06") == price_for("gpt-4o")


def test_fine_tuned_id_costs_the_fine_tuned_price_of_its_base() -> None:
    model = "ft:gpt-4.1-mini-2025-04-14:my-org:insecure-s1:BxY12z"
    price = price_for(model)
    assert price == Price(input=0.8, cached_input=0.2, output=3.2, training=5.0)
    assert price_for(model + ":ckpt-step-200") == price
    assert base_of(model) == "gpt-4.1-mini-2025-04-14"


def test_cost_counts_cached_prompt_tokens_at_the_cached_rate() -> None:
    # 1M prompt tokens of which 400k cached, 100k completion, on gpt-4.1
    dollars = cost("gpt-4.1", 1_000_000, 100_000, cached=400_000)
    assert dollars == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.1 * 8.0)


def test_cached_rate_defaults_to_the_input_rate() -> None:
    assert cost("gpt-4", 1000, 0, cached=500) == pytest.approx(1000 * 30 / 1e6)


def test_unknown_models_have_no_price_rather_than_a_guess() -> None:
    assert price_for("mystery-model") is None
    assert cost("mystery-model", 10, 10) is None
    assert price_for("ft:mystery:org::id") is None
    assert price_for("gpt-5") is not None and price_for("ft:gpt-5:org::x") is None


def test_lab_overrides_win_exact_then_glob() -> None:
    overrides = {
        "ft:gpt-4.1-mini-2025-04-14:*": Price(input=1, output=2),
        "ft:gpt-4.1-mini-2025-04-14:org:special:x": Price(input=9, output=9),
        "local-*": Price(input=0, output=0),
    }
    assert price_for("ft:gpt-4.1-mini-2025-04-14:org:special:x", overrides) == Price(
        input=9, output=9
    )
    assert price_for("ft:gpt-4.1-mini-2025-04-14:org:other:y", overrides) == Price(
        input=1, output=2
    )
    assert cost("local-llama", 1000, 1000, overrides=overrides) == 0
    assert price_for("gpt-4.1", overrides) == price_for("gpt-4.1")


def test_training_cost_uses_the_base_training_price_and_its_override() -> None:
    assert training_cost("gpt-4.1-nano", 2_000_000) == pytest.approx(3.0)
    assert training_cost("gpt-5", 1000) is None
    overrides = {"gpt-4.1-nano*": Price(input=0.1, output=0.4, training=2.0)}
    assert training_cost("gpt-4.1-nano-2025-04-14", 1_000_000, overrides) == pytest.approx(2.0)
