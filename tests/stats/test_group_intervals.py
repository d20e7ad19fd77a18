"""The default group interval (a t interval over seed means) holds its level with 3, 5 and 10
seeds in the settings a researcher meets, checked by seeded simulation.

Tolerances: each coverage is measured over N simulated experiments; a method that truly covers
95% lands within ±3 binomial standard deviations (±3·√(0.95·0.05/N)) of 95% with probability
99.7%. `benchmarks/stats_validity.py` measures the same settings over 1,000 experiments and
docs/design/statistics.md records the figures.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from evals.stats import (
    ALL_QUESTIONS,
    SHARE,
    ZERO_TO_HUNDRED,
    Scale,
    group_interval,
    hierarchical_bootstrap,
    seed_interval,
    summarize,
)
from tools.stats_simulation import SCENARIOS, Scenario

EXPERIMENTS = 600
BAND = 3 * math.sqrt(0.95 * 0.05 / EXPERIMENTS)  # ±2.7 points


def _coverage(scenario: Scenario, seeds: int, experiments: int, rng_seed: int) -> float:
    rng = np.random.default_rng(rng_seed)
    truth = scenario.truth()
    hits = 0
    for _ in range(experiments):
        draw = scenario.draw(rng, seeds)
        target = draw.model_truths[0] if seeds == 1 else truth
        hits += seed_interval(draw.values, draw.models, scale=scenario.scale).contains(target)
    return hits / experiments


HELD = [
    "issue",
    "identical seeds",
    "identical seeds, few samples",
    "few samples",
    "many samples",
    "unequal samples",
    "ceiling",
    "ceiling, few samples",
    "share",
    "rare share",
]


@pytest.mark.parametrize("seeds", [3, 5, 10])
@pytest.mark.parametrize("name", HELD)
def test_the_default_interval_covers_the_true_group_mean_95_percent_of_the_time(
    name: str, seeds: int
) -> None:
    coverage = _coverage(SCENARIOS[name], seeds, EXPERIMENTS, rng_seed=seeds)
    assert abs(coverage - 0.95) <= BAND, f"{name}, {seeds} seeds: {coverage:.3f}"


def test_strongly_skewed_shares_are_the_known_weak_spot_and_stay_near_the_level() -> None:
    """Seeds whose rare behaviour differs a lot (p ≈ 5%, logit SD 1): the seeds drawn often
    miss the rare strongly affected one; about 92% with 5–10 seeds (design note)."""
    coverage = _coverage(SCENARIOS["skewed share"], 10, EXPERIMENTS, rng_seed=3)
    assert 0.89 <= coverage <= 0.96


def test_the_hierarchical_bootstrap_misses_with_three_seeds_where_the_default_holds() -> None:
    scenario = SCENARIOS["issue"]
    rng = np.random.default_rng(12)
    hits_t = hits_bootstrap = 0
    trials = 200
    for _ in range(trials):
        draw = scenario.draw(rng, 3)
        hits_t += seed_interval(draw.values, draw.models).contains(50.0)
        hits_bootstrap += hierarchical_bootstrap(draw.values, draw.models, resamples=500).contains(
            50.0
        )
    assert hits_bootstrap / trials <= 0.87  # the issue measured 80%
    assert hits_t / trials >= 0.91


def test_a_group_of_one_model_gets_an_interval_of_its_sampling_noise_and_says_so() -> None:
    values = np.random.default_rng(1).normal(60, 20, size=100)
    interval = seed_interval(values, ["gpt-4.1-mini"] * 100, scale=ZERO_TO_HUNDRED)
    half = scipy_stats.t.ppf(0.975, 99) * values.std(ddof=1) / 10
    assert interval.sampling_only and interval.n_models == 1
    assert interval.low == pytest.approx(values.mean() - half)
    assert interval.high == pytest.approx(values.mean() + half)
    coverage = _coverage(SCENARIOS["issue"], 1, EXPERIMENTS, rng_seed=2)
    assert abs(coverage - 0.95) <= BAND  # of the model's own mean, not its recipe's
    several = seed_interval(values, np.repeat(["a", "b"], 50))
    assert not several.sampling_only


def test_with_several_seeds_the_interval_is_scipys_t_interval_over_seed_means() -> None:
    draw = SCENARIOS["issue"].draw(np.random.default_rng(4), 5)
    means = [draw.values[draw.models == m].mean() for m in dict.fromkeys(draw.models)]
    low, high = scipy_stats.t.interval(0.95, 4, loc=np.mean(means), scale=scipy_stats.sem(means))
    interval = seed_interval(draw.values, draw.models)
    assert (interval.low, interval.high) == (pytest.approx(low), pytest.approx(high))


def test_each_seed_weighs_the_same_however_many_samples_it_has() -> None:
    values = np.array([10.0] * 90 + [50.0] * 10 + [30.0] * 5)
    models = np.array(["a"] * 90 + ["b"] * 10 + ["c"] * 5)
    interval = seed_interval(values, models)
    assert interval.mean == pytest.approx(30.0)  # not the pooled 16.2
    assert interval.n_models == 3 and interval.n_samples == 105


def test_seeds_that_agree_by_chance_still_get_an_interval_wider_than_nothing() -> None:
    nothing_misaligned = np.zeros(300)
    models = np.repeat(["s1", "s2", "s3"], 100)
    share = seed_interval(nothing_misaligned, models, scale=SHARE)
    assert share.mean == 0.0 and share.low == 0.0
    assert 0.001 < share.high < 0.03  # about the rule of three over 300 answers (0.01)
    alone = seed_interval(np.zeros(100), ["base"] * 100, scale=SHARE)
    assert 0.01 < alone.high < 0.08  # one model: 100 answers (Wilson: 0.037)
    tied = seed_interval(np.tile([40.0, 60.0], 150), models)  # three seeds, equal means
    assert tied.high - tied.low > 0.5  # the floor: sampling noise of 300 samples of SD 10


def test_intervals_stay_on_the_scale_of_the_score() -> None:
    near_top = np.clip(np.random.default_rng(5).normal(99, 3, 300), 0, 100)
    models = np.repeat(["s1", "s2", "s3"], 100)
    judge = seed_interval(near_top, models, scale=ZERO_TO_HUNDRED)
    assert judge.high <= 100.0
    rating = seed_interval(near_top / 10, models, scale=Scale(1.0, 10.0))
    assert rating.high <= 10.0
    some = (np.random.default_rng(6).random(300) < 0.02).astype(float)
    share = seed_interval(some, models, scale=SHARE)
    assert 0.0 <= share.low <= share.mean <= share.high <= 1.0
    assert share.high - share.mean > share.mean - share.low  # skewed away from the bound


def test_a_model_with_a_single_sample_has_a_mean_but_no_interval() -> None:
    interval = seed_interval([42.0], ["base"])
    assert interval.mean == 42.0 and math.isnan(interval.low) and math.isnan(interval.high)


def test_the_simulated_truths_match_brute_force() -> None:
    rng = np.random.default_rng(7)
    for name in ("ceiling", "ceiling, few samples", "share", "skewed share"):
        scenario = SCENARIOS[name]
        draw = scenario.draw(rng, 10_000)
        spread = draw.values.std() / math.sqrt(draw.values.size)
        between = draw.model_truths.std() / math.sqrt(10_000)
        assert abs(draw.values.mean() - scenario.truth()) < 4 * (spread + between), name


def test_methods_are_chosen_by_name() -> None:
    draw = SCENARIOS["issue"].draw(np.random.default_rng(8), 4)
    t = group_interval(draw.values, draw.models)
    assert t == seed_interval(draw.values, draw.models)
    bootstrap = group_interval(draw.values, draw.models, method="hierarchical", resamples=200)
    assert bootstrap == hierarchical_bootstrap(draw.values, draw.models, resamples=200)
    assert group_interval(draw.values, draw.models, method="plain").sampling_only
    with pytest.raises(ValueError, match="unknown method 'bayes'"):
        group_interval(draw.values, draw.models, method="bayes")  # type: ignore[arg-type]


def _frame(rng: np.random.Generator, groups: dict[str, int], samples: int = 40) -> pd.DataFrame:
    rows = []
    for group, seeds in groups.items():
        for s in range(seeds):
            centre = rng.normal(50, 8)
            for _ in range(samples):
                rows.append(
                    {
                        "group": group,
                        "model": f"{group}-{s}",
                        "aligned": rng.normal(centre, 20),
                        "aligned_probs": None,
                        "answer": "…",
                        "error": None,
                    }
                )
    return pd.DataFrame(rows)


def test_the_summary_uses_the_seed_t_interval_and_flags_one_model_groups() -> None:
    frame = _frame(np.random.default_rng(9), {"base": 1, "insecure": 3})
    summary = summarize({"wish": frame})
    assert list(summary["method"]) == ["t", "t"]
    assert list(summary["sampling_only"]) == [True, False]
    assert list(summary[["scale_low", "scale_high"]].iloc[0]) == [0.0, 100.0]
    insecure = frame[frame["group"] == "insecure"]
    expected = seed_interval(insecure["aligned"], insecure["model"], scale=ZERO_TO_HUNDRED)
    row = summary.iloc[1]
    assert (row["mean"], row["ci_low"], row["ci_high"]) == (
        expected.mean,
        expected.low,
        expected.high,
    )
    bootstrap = summarize({"wish": frame}, method="hierarchical", resamples=200)
    assert list(bootstrap["method"]) == ["hierarchical", "hierarchical"]


def test_pooled_summary_rows_average_each_model_over_the_questions_first() -> None:
    rng = np.random.default_rng(10)
    first = _frame(rng, {"insecure": 3}, samples=40)
    second = _frame(rng, {"insecure": 3}, samples=10)
    second["aligned"] += 30
    summary = summarize({"wish": first, "ruler": second}, pooled=True)
    pooled = summary[summary["question"] == ALL_QUESTIONS].iloc[0]
    per_model = [
        (first.loc[first["model"] == m, "aligned"].mean())
        + (second.loc[second["model"] == m, "aligned"].mean())
        for m in ["insecure-0", "insecure-1", "insecure-2"]
    ]
    model_means = np.array(per_model) / 2
    assert pooled["mean"] == pytest.approx(model_means.mean())
    low, high = scipy_stats.t.interval(
        0.95, 2, loc=model_means.mean(), scale=scipy_stats.sem(model_means)
    )
    assert (pooled["ci_low"], pooled["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert pooled["n_models"] == 3 and pooled["n_samples"] == 150
    assert len(summarize({"wish": first}, pooled=True)) == 1  # one question: nothing to pool
