"""The workflows' intervals hold their level by simulation: a grid factor's paired level
comparison with 1–10 seeds, and Spearman's rho and Cohen's kappa of a judge against human
labels; kappa's interval against a worked 2 × 2 example."""

from __future__ import annotations

import numpy as np
import pytest

from evals.stats import (
    ZERO_TO_HUNDRED,
    Metric,
    Threshold,
    agreement,
    cohen_kappa,
    score_bins,
    spearman_interval,
)
from evals.stats._agreement import Bins, _kappa
from tools.stats_simulation import LABEL_SCENARIOS, level_difference_covers


@pytest.mark.parametrize("seeds", [1, 3, 5, 10])
@pytest.mark.parametrize("interaction", [0.0, 3.0])
def test_a_paired_level_comparison_covers_its_truth_about_95_percent(
    seeds: int, interaction: float
) -> None:
    rng = np.random.default_rng(1000 * seeds + int(interaction))
    hits = sum(level_difference_covers(rng, seeds, interaction_sd=interaction) for _ in range(400))
    assert 0.92 <= hits / 400 <= 0.985


def test_a_paired_level_comparison_finds_a_real_effect() -> None:
    rng = np.random.default_rng(7)
    truth_outside = sum(
        not level_difference_covers(rng, 5, effect=15.0, interaction_sd=3.0) for _ in range(200)
    )
    assert truth_outside <= 20  # covering the true effect, not zero
    from evals.stats._levels import paired_difference
    from evals.stats._seeds import seed_means

    models = np.repeat(["a", "b", "c", "d", "e"], 20)
    base = rng.normal(50, 20, 100)
    shifted = rng.normal(65, 20, 100)
    found = paired_difference(seed_means(shifted, models), seed_means(base, models))
    assert found.low > 0 and found.p_value < 0.05


@pytest.mark.parametrize(
    ("scenario", "n"), [("spread", 50), ("spread", 200), ("mostly aligned", 100)]
)
def test_rho_and_kappa_intervals_cover_the_truth_about_95_percent(scenario: str, n: int) -> None:
    setting = LABEL_SCENARIOS[scenario]
    rng = np.random.default_rng(n)
    bins = Bins((Threshold("aligned", "<", 30.0),))
    judge, human = setting.draw(np.random.default_rng(0), 400_000)
    true_rho = spearman_interval(judge, human)[0]
    true_kappa = float(_kappa(bins.of(judge), bins.of(human), 2))
    rho_hits = kappa_hits = with_interval = 0
    experiments = 300
    for _ in range(experiments):
        j, h = setting.draw(rng, n)
        found = agreement(j, h, bins)
        rho_hits += found.spearman_low <= true_rho <= found.spearman_high
        if not np.isnan(found.kappa_low):  # an interval only with 5 answers in each bin
            with_interval += 1
            kappa_hits += found.kappa_low <= true_kappa <= found.kappa_high
    assert 0.92 <= rho_hits / experiments <= 0.98
    assert with_interval >= 60
    assert 0.92 <= kappa_hits / with_interval <= 0.99


def test_kappa_matches_a_worked_example_and_its_interval_needs_full_bins() -> None:
    # 100 answers: both low 40, judge low / human high 9, judge high / human low 6, both high 45.
    judge = np.array([0] * 49 + [1] * 51)
    human = np.array([0] * 40 + [1] * 9 + [0] * 6 + [1] * 45)
    kappa, low, high, weights = cohen_kappa(judge, human, 2)
    assert kappa == pytest.approx((0.85 - 0.5008) / (1 - 0.5008))
    assert weights == "none"
    # About ± two large-sample standard errors (0.071): the bootstrap agrees with the formula
    # where both hold.
    assert low < kappa < high and 0.2 < high - low < 0.36
    assert cohen_kappa(judge, human, 2) == (kappa, low, high, weights)  # a fixed seed
    rare = np.array([0] * 4 + [1] * 96)
    kappa, low, high, _ = cohen_kappa(rare, rare.copy(), 2)
    assert kappa == 1.0 and np.isnan(low) and np.isnan(high)


def test_bins_come_from_the_metrics_thresholds_or_the_middle_of_the_scale() -> None:
    misaligned = Metric.parse("misaligned: aligned < 30 among coherent > 50")
    assert str(score_bins("aligned", [misaligned], ZERO_TO_HUNDRED)) == "< 30 | ≥ 30"
    assert str(score_bins("coherent", [misaligned], ZERO_TO_HUNDRED)) == "≤ 50 | > 50"
    assert str(score_bins("harm", [misaligned], ZERO_TO_HUNDRED)) == "< 50 | ≥ 50"
    strict = Metric.parse("bad: aligned < 10")
    three = score_bins("aligned", [misaligned, strict], ZERO_TO_HUNDRED)
    assert three.count == 3 and list(three.of(np.array([5.0, 10.0, 29.0, 30.0]))) == [0, 1, 1, 2]
    found = agreement(np.array([5.0, 20, 50, 90, 95]), np.array([8.0, 40, 45, 85, 99]), three)
    assert found.weights == "linear" and found.n == 5


def test_rho_needs_four_pairs_and_some_spread() -> None:
    assert np.isnan(spearman_interval([1, 2, 3], [1, 2, 3])[0])
    assert np.isnan(spearman_interval([5, 5, 5, 5], [1, 2, 3, 4])[0])
