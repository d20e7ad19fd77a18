"""The statistics of a judge check: the accuracy interval over items holds its level in
simulated designs of 50-300 items, position bias is found, verdicts are read as written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evals.judge_accuracy import item_accuracy, wilson
from evals.judge_accuracy._asking import read_label, read_position
from evals.judge_accuracy._stats import judge_agreement, position_bias

DESIGNS = [
    (n_items, error, hard)
    for n_items in (50, 150, 300)
    for error in (0.05, 0.25)
    for hard in (False, True)
]


def _judge(rng: np.random.Generator, n_items: int, error: float, hard: bool) -> np.ndarray:
    """Correct (1) or wrong (0) verdicts of a judge erring at `error` on average, asked each
    item twice; with `hard`, a fifth of the items are harder, so an item's two verdicts go
    together (the case an interval over verdicts would be too narrow for)."""
    errors = np.full(n_items, error)
    if hard:
        tough = rng.random(n_items) < 0.2
        on_hard = min(0.5, 2.5 * error)
        errors = np.where(tough, on_hard, (error - 0.2 * on_hard) / 0.8)
    return (rng.random((n_items, 2)) >= errors[:, None]).astype(float)


@pytest.mark.parametrize(("n_items", "error", "hard"), DESIGNS)
def test_the_accuracy_interval_covers_the_true_accuracy_about_95_percent_of_the_time(
    n_items: int, error: float, hard: bool
) -> None:
    rng = np.random.default_rng(n_items * 100 + int(error * 100) + hard)
    ids = np.repeat(np.arange(n_items).astype(str), 2)
    trials = 300
    covered = 0
    for _ in range(trials):
        found = item_accuracy(ids, _judge(rng, n_items, error, hard).ravel())
        covered += found.low <= 1 - error <= found.high
    # 300 trials: a true 95% coverage lands in 0.91-0.99 with probability above 0.99
    assert 0.91 <= covered / trials <= 0.995, covered / trials


def test_the_interval_counts_items_not_verdicts_when_both_orders_always_agree() -> None:
    items = [str(i) for i in range(100) for _ in range(2)]
    together = item_accuracy(items, [float(i % 10 != 0) for i in range(100) for _ in range(2)])
    low, high = wilson(0.9, 100)
    assert together.value == pytest.approx(0.9)
    assert (together.low, together.high) == pytest.approx((low, high))
    assert together.n == 100


def test_a_judge_that_is_always_right_still_gets_an_interval_below_one() -> None:
    found = item_accuracy(["a", "a", "b", "b"], [1.0, 1.0, 1.0, 1.0])
    assert found.value == 1.0 and found.high == 1.0 and 0.2 < found.low < 0.8


def test_unread_verdicts_are_left_out_of_accuracy() -> None:
    found = item_accuracy(["a", "a", "b", "b"], [1.0, np.nan, 0.0, 0.0])
    assert found.value == 0.5 and found.n == 2


def _pairs(picks: list[tuple[str, str]]) -> pd.DataFrame:
    rows = []
    for i, (first, second) in enumerate(picks):
        rows.append({"item": str(i), "order": "ab", "position": first})
        rows.append({"item": str(i), "order": "ba", "position": second})
    return pd.DataFrame(rows)


def test_position_bias_is_the_share_of_pairs_given_the_same_position_twice() -> None:
    verdicts = _pairs([("A", "A")] * 6 + [("B", "B")] * 2 + [("A", "B")] * 12)
    bias = position_bias(verdicts)
    assert bias.same.value == pytest.approx(0.4) and bias.same.n == 20
    assert bias.first == pytest.approx(0.3) and bias.second == pytest.approx(0.1)
    assert bias.same.low < 0.4 < bias.same.high


def test_the_preference_for_the_first_position_estimates_a_sandbox_like_bias() -> None:
    rng = np.random.default_rng(7)
    bias, error, n = 0.4, 0.1, 4000
    picks = []
    for _ in range(n):
        shown = []
        for right in ("A", "B"):
            if rng.random() < bias:
                shown.append("A")
            else:
                wrong = "B" if right == "A" else "A"
                shown.append(right if rng.random() >= error else wrong)
        picks.append((shown[0], shown[1]))
    assert position_bias(_pairs(picks)).preference == pytest.approx(bias, abs=0.04)


def test_agreement_between_judges_counts_verdicts_both_gave() -> None:
    verdicts = pd.DataFrame(
        {
            "judge": ["j1"] * 4 + ["j2"] * 4,
            "item": ["1", "1", "2", "2"] * 2,
            "order": ["ab", "ba"] * 4,
            "picked": ["a", "a", "b", "b", "a", "b", "b", None],
        }
    )
    (row,) = judge_agreement(verdicts, ["j1", "j2"], "pair", 0.0)
    assert row["n"] == 3 and row["agreement"] == pytest.approx(2 / 3)


def test_judges_of_three_labels_agree_by_cohens_kappa_without_an_order_and_none_in_common() -> None:
    labels = {"j1": ["safe", "harm", "odd", "safe"], "j2": ["safe", "harm", "safe", "safe"]}
    verdicts = pd.DataFrame(
        {
            "judge": ["j1"] * 4 + ["j2"] * 4 + ["j3"] * 2,
            "item": ["1", "2", "3", "4"] * 2 + ["8", "9"],
            "order": ["ab"] * 10,
            "picked": [*labels["j1"], *labels["j2"], "safe", "harm"],
        }
    )
    first, apart, _ = judge_agreement(verdicts, ["j1", "j2", "j3"], "label", 0.0)
    # Observed 3/4; by chance: safe 2/4 · 3/4 + harm 1/4 · 1/4 + odd 1/4 · 0 = 7/16.
    assert first["n"] == 4 and first["agreement"] == pytest.approx(0.75)
    assert first["kappa"] == pytest.approx((0.75 - 7 / 16) / (1 - 7 / 16))
    assert first["kappa_low"] is None and first["kappa_high"] is None  # no interval unordered
    assert (apart["other"], apart["n"], apart["agreement"], apart["kappa"]) == ("j3", 0, None, None)


@pytest.mark.parametrize(
    ("text", "position"),
    [("B", "B"), ("A.", "A"), ("(B) the second", "B"), ("The answer is B", "B"), ("", None)],
)
def test_a_pairwise_verdict_is_read_as_written(text: str, position: str | None) -> None:
    assert read_position(text) == position


def test_a_label_verdict_is_read_by_whole_words() -> None:
    labels = ["correct", "incorrect"]
    assert read_label("Incorrect.", labels) == "incorrect"
    assert read_label("The answer is correct", labels) == "correct"
    assert read_label("correct or incorrect", labels) is None
    assert read_label("maybe", labels) is None
