"""Bootstrap intervals checked against independent computations: a plain loop, scipy, and
coverage of a known mean on synthetic seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evals.stats import Interval, bootstrap_interval, hierarchical_bootstrap, plain_bootstrap


def _seeds(rng: np.random.Generator, models: int, samples: int, between: float, within: float):
    effects = rng.normal(0.0, between, size=models)
    values = np.concatenate([rng.normal(e, within, size=samples) for e in effects])
    labels = np.repeat([f"ft:seed-{i}" for i in range(models)], samples)
    return values, labels


def _loop_hierarchical(values, labels, resamples: int, seed: int) -> tuple[float, float]:
    """The textbook two-level resampling, one resample at a time."""
    rng = np.random.default_rng(seed)
    by_model = [values[labels == m] for m in dict.fromkeys(labels)]
    estimates = []
    for _ in range(resamples):
        chosen = [by_model[rng.integers(len(by_model))] for _ in by_model]
        estimates.append(np.mean([rng.choice(s, size=len(s), replace=True).mean() for s in chosen]))
    low, high = np.quantile(estimates, [0.025, 0.975])
    return float(low), float(high)


def test_a_single_model_group_equals_the_plain_bootstrap_of_its_samples() -> None:
    values = np.random.default_rng(1).normal(50, 10, size=80)
    hierarchical = hierarchical_bootstrap(values, ["gpt-4.1-mini"] * 80)
    plain = plain_bootstrap(values)
    assert (hierarchical.mean, hierarchical.low, hierarchical.high) == (
        plain.mean,
        plain.low,
        plain.high,
    )
    assert hierarchical.n_models == 1 and hierarchical.n_samples == 80


def test_the_hierarchical_interval_matches_a_straightforward_loop() -> None:
    values, labels = _seeds(np.random.default_rng(2), models=6, samples=25, between=3, within=8)
    fast = hierarchical_bootstrap(values, labels, resamples=2000, seed=7)
    low, high = _loop_hierarchical(values, labels, resamples=2000, seed=11)
    width = high - low
    assert fast.mean == pytest.approx(np.mean([values[labels == m].mean() for m in set(labels)]))
    assert abs(fast.low - low) < 0.15 * width
    assert abs(fast.high - high) < 0.15 * width


def test_the_plain_interval_agrees_with_scipy() -> None:
    values = np.random.default_rng(3).exponential(20, size=300)
    ours = plain_bootstrap(values, resamples=4000)
    theirs = scipy_stats.bootstrap(
        (values,), np.mean, n_resamples=4000, method="percentile", random_state=5
    ).confidence_interval
    width = theirs.high - theirs.low
    assert abs(ours.low - theirs.low) < 0.1 * width
    assert abs(ours.high - theirs.high) < 0.1 * width


def test_hierarchical_intervals_cover_a_known_mean_where_the_plain_bootstrap_does_not() -> None:
    rng = np.random.default_rng(4)
    hits_hierarchical = hits_plain = 0
    trials = 120
    for _ in range(trials):
        values, labels = _seeds(rng, models=10, samples=15, between=1.5, within=2.0)
        hits_hierarchical += hierarchical_bootstrap(values, labels, resamples=1000).contains(0.0)
        hits_plain += plain_bootstrap(values, resamples=1000).contains(0.0)
    print(
        f"coverage: hierarchical {hits_hierarchical / trials:.2f}, plain {hits_plain / trials:.2f}"
    )
    assert hits_hierarchical / trials >= 0.85
    assert hits_plain / trials <= 0.75


def test_the_same_data_always_gives_the_same_interval() -> None:
    values, labels = _seeds(np.random.default_rng(5), models=4, samples=30, between=2, within=5)
    assert hierarchical_bootstrap(values, labels) == hierarchical_bootstrap(values, labels)
    assert hierarchical_bootstrap(values, labels, seed=1) != hierarchical_bootstrap(values, labels)


def test_missing_scores_are_dropped_and_models_without_scores_do_not_count() -> None:
    values = np.array([1.0, 2.0, np.nan, np.nan, 3.0, 5.0])
    labels = np.array(["a", "a", "b", "b", "c", "c"])
    interval = hierarchical_bootstrap(values, labels)
    assert interval.n_models == 2 and interval.n_samples == 4
    assert interval.mean == pytest.approx((1.5 + 4.0) / 2)
    empty = bootstrap_interval([np.nan, np.nan], ["a", "b"])
    assert isinstance(empty, Interval) and np.isnan(empty.mean) and empty.n_samples == 0


def test_unknown_methods_and_missing_models_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        bootstrap_interval([1.0], ["a"], method="bayes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs the model"):
        bootstrap_interval([1.0, 2.0])


def test_with_ci_plain_a_groups_mean_is_still_the_mean_of_its_models_means() -> None:
    # Two seeds answered 5 and 200 times (the rest failed): one pool would weigh the second
    # 40 times as much, so summary.csv's mean would change with the interval method.
    rng = np.random.default_rng(4)
    few, many = rng.normal(20, 5, size=5), rng.normal(80, 5, size=200)
    values = np.concatenate([few, many, [np.nan]])
    labels = np.array(["ft:seed-1"] * 5 + ["ft:seed-2"] * 201)
    plain = bootstrap_interval(values, labels, method="plain", resamples=4000, seed=9)
    means = [few.mean(), many.mean()]
    assert plain.mean == pytest.approx(np.mean(means))
    assert plain.low < plain.mean < plain.high
    assert (plain.n_models, plain.n_samples, plain.sampling_only) == (2, 205, True)
    # Sampling noise only: each seed's mean resampled, the seeds kept (the delta method).
    se = np.sqrt(few.var(ddof=1) / 5 + many.var(ddof=1) / 200) / 2
    assert plain.high - plain.low == pytest.approx(2 * 1.96 * se, rel=0.15)
    one = bootstrap_interval(few, ["ft:seed-1"] * 5, method="plain")
    assert one == plain_bootstrap(few)
