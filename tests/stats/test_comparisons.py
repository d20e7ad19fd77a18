"""`compare_groups`: each group against a baseline, with seeds as the unit, checked by seeded
simulation and against scipy.

Tolerances: the false-positive share and the coverage of 0 are measured over 1,000 simulated
experiments (binomial SD 0.7 points at 5%), so the brief's bands (2–7% and 93–98%) are checked
as they are, with the measured rates (3–5.5%) well inside them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from evals.stats import (
    ALL_QUESTIONS,
    COMPARISON_COLUMNS,
    SHARE,
    compare_groups,
    compare_levels,
    compare_seeds,
    holm,
    seed_means,
)
from tools.stats_simulation import SCENARIOS


def _null_rates(seeds: int, one_model_baseline: bool, experiments: int) -> tuple[float, float]:
    scenario = SCENARIOS["issue"]
    rng = np.random.default_rng(100 + seeds)
    positives = covered = 0
    for _ in range(experiments):
        group = scenario.draw(rng, seeds)
        if one_model_baseline:
            baseline = scenario.draw(rng, 1, fixed=True)
        else:
            baseline = scenario.draw(rng, seeds)
        result = compare_seeds(group.values, group.models, baseline.values, baseline.models)
        positives += result.p_value < 0.05
        covered += result.low <= 0.0 <= result.high
    return positives / experiments, covered / experiments


@pytest.mark.parametrize("seeds", [3, 5])
def test_under_the_null_few_seeds_give_2_to_7_percent_false_positives(seeds: int) -> None:
    false_positives, covers_zero = _null_rates(seeds, one_model_baseline=False, experiments=1000)
    assert 0.02 <= false_positives <= 0.07
    assert 0.93 <= covers_zero <= 0.98


@pytest.mark.parametrize("seeds", [3, 5])
def test_a_one_model_baseline_against_few_seeds_holds_the_level(seeds: int) -> None:
    false_positives, covers_zero = _null_rates(seeds, one_model_baseline=True, experiments=600)
    assert 0.015 <= false_positives <= 0.07  # Welch's df alone gave 7.5% with three seeds
    assert 0.93 <= covers_zero <= 0.985


def _run_frames(
    rng: np.random.Generator, seeds: int, effect: float, questions: int = 3
) -> dict[str, pd.DataFrame]:
    """A run: a base model and two conditions of `seeds` seeds over `questions` questions;
    `treated` seeds sit `effect` lower on every question, `control` seeds are like the base."""
    frames = {}
    offsets = {
        "control": rng.normal(0, 8, seeds),
        "treated": rng.normal(-effect, 8, seeds),
        "base": np.zeros(1),
    }
    for q in range(questions):
        parts = []
        for group, shifts in offsets.items():
            for s, shift in enumerate(shifts):
                centre = 60.0 + 5 * q + shift
                parts.append(
                    pd.DataFrame(
                        {
                            "group": group,
                            "model": f"{group}-{s}",
                            "aligned": rng.normal(centre, 20, 100),
                            "error": None,
                        }
                    )
                )
        frames[f"q{q}"] = pd.concat(parts, ignore_index=True)
    return frames


def _aligned(frames: dict[str, pd.DataFrame]) -> dict[str, list[str]]:
    return {question: ["aligned"] for question in frames}


@pytest.mark.parametrize(("seeds", "share"), [(3, 0.55), (5, 0.9)])
def test_an_effect_of_three_seed_sds_is_found_in_most_runs(seeds: int, share: float) -> None:
    """One condition against another, `seeds` seeds each (exactly: ~65% and ~97%)."""
    rng = np.random.default_rng(200 + seeds)
    runs = 200
    found = 0
    for _ in range(runs):
        frames = _run_frames(rng, seeds=seeds, effect=24.0, questions=1)
        frame = frames["q0"][frames["q0"]["group"] != "base"]
        table = compare_groups({"q0": frame}, "control", {"q0": ["aligned"]})
        found += int(table["p_adjusted"].iloc[0] < 0.05)
    assert found / runs > share


def test_in_a_run_of_several_questions_holm_keeps_the_control_quiet_and_finds_the_effect() -> None:
    """Base model, a control and a treated condition of five seeds, three questions: eight
    comparisons, Holm-corrected together."""
    rng = np.random.default_rng(210)
    found = false = tested = 0
    runs = 100
    for _ in range(runs):
        frames = _run_frames(rng, seeds=5, effect=24.0, questions=3)
        table = compare_groups(frames, "base", _aligned(frames))
        treated = table[(table["group"] == "treated") & (table["question"] == ALL_QUESTIONS)]
        found += int(treated["p_adjusted"].iloc[0] < 0.05)
        control = table[table["group"] == "control"]
        false += int((control["p_adjusted"] < 0.05).sum())
        tested += len(control)
    assert len(table) == 8
    assert found / runs > 0.75  # ~85%
    assert false / tested < 0.04


def test_two_groups_of_seeds_are_compared_with_welchs_test_on_their_means() -> None:
    rng = np.random.default_rng(300)
    group, baseline = SCENARIOS["issue"].draw(rng, 4), SCENARIOS["issue"].draw(rng, 5, 10.0)
    result = compare_seeds(group.values, group.models, baseline.values, baseline.models)

    def means(draw):  # type: ignore[no-untyped-def]
        return [draw.values[draw.models == m].mean() for m in dict.fromkeys(draw.models)]

    scipy_result = scipy_stats.ttest_ind(means(group), means(baseline), equal_var=False)
    assert result.method == "welch"
    assert result.p_value == pytest.approx(scipy_result.pvalue)
    low, high = scipy_result.confidence_interval(0.95)
    assert (result.low, result.high) == (pytest.approx(low), pytest.approx(high))


def test_a_one_model_baseline_brings_its_sampling_noise_only() -> None:
    rng = np.random.default_rng(301)
    group = SCENARIOS["issue"].draw(rng, 4)
    base = rng.normal(40, 20, 200)
    result = compare_seeds(group.values, group.models, base, ["gpt-4.1-mini"] * 200)
    seeds = seed_means(group.values, group.models)
    group_variance = float(np.var(seeds.means, ddof=1)) / 4
    base_variance = float(np.var(base, ddof=1)) / 200
    t3, t199 = scipy_stats.t.ppf(0.975, 3), scipy_stats.t.ppf(0.975, 199)
    critical = (group_variance * t3 + base_variance * t199) / (group_variance + base_variance)
    half = critical * math.sqrt(group_variance + base_variance)
    assert result.method == "cochran-cox" and result.n_models_baseline == 1
    assert result.difference == pytest.approx(seeds.mean - base.mean())
    assert (result.low, result.high) == (
        pytest.approx(result.difference - half),
        pytest.approx(result.difference + half),
    )
    # The p-value is where the interval's edge reaches 0.
    at_edge = compare_seeds(
        group.values,
        group.models,
        base,
        ["gpt-4.1-mini"] * 200,
        confidence=1 - result.p_value,
    )
    assert min(abs(at_edge.low), abs(at_edge.high)) == pytest.approx(0.0, abs=1e-6)


def test_holm_adjusts_step_down_and_ignores_missing_p_values() -> None:
    adjusted = holm([0.01, 0.04, math.nan, 0.03, 0.5])
    assert adjusted[0] == pytest.approx(0.04)  # 4 × 0.01
    assert adjusted[3] == pytest.approx(0.09)  # 3 × 0.03
    assert adjusted[1] == pytest.approx(0.09)  # 2 × 0.04 = 0.08, raised to keep the order
    assert adjusted[4] == pytest.approx(0.5)
    assert math.isnan(adjusted[2])
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]


def test_the_comparison_table_has_a_row_per_question_score_and_group_plus_pooled_rows() -> None:
    frames = _run_frames(np.random.default_rng(400), seeds=3, effect=24.0, questions=2)
    for frame in frames.values():
        frame["coherent"] = 80.0 + frame["aligned"] * 0.1
    table = compare_groups(frames, "base", {q: ["aligned", "coherent"] for q in frames})
    assert list(table.columns) == COMPARISON_COLUMNS
    keys = list(zip(table["question"], table["score"], table["group"], strict=True))
    assert keys == [
        ("q0", "aligned", "control"),
        ("q0", "aligned", "treated"),
        ("q0", "coherent", "control"),
        ("q0", "coherent", "treated"),
        ("q1", "aligned", "control"),
        ("q1", "aligned", "treated"),
        ("q1", "coherent", "control"),
        ("q1", "coherent", "treated"),
        (ALL_QUESTIONS, "aligned", "control"),
        (ALL_QUESTIONS, "aligned", "treated"),
        (ALL_QUESTIONS, "coherent", "control"),
        (ALL_QUESTIONS, "coherent", "treated"),
    ]
    assert (table["baseline"] == "base").all() and (table["n_models_baseline"] == 1).all()
    assert (table["n_models"] == 3).all() and not table["sampling_only"].any()
    assert np.allclose(table["p_adjusted"], holm(table["p_value"]))
    assert (table["difference"] == table["mean"] - table["mean_baseline"]).all()


def test_the_pooled_row_compares_models_averaged_over_the_questions() -> None:
    frames = _run_frames(np.random.default_rng(401), seeds=3, effect=10.0, questions=3)
    table = compare_groups(frames, "control", _aligned(frames))
    pooled = table[(table["question"] == ALL_QUESTIONS) & (table["group"] == "treated")].iloc[0]
    everything = pd.concat([f.assign(question=q) for q, f in frames.items()])

    def model_means(group: str) -> np.ndarray:
        part = everything[everything["group"] == group]
        return part.groupby(["model", "question"])["aligned"].mean().groupby("model").mean()

    expected = scipy_stats.ttest_ind(
        model_means("treated"), model_means("control"), equal_var=False
    )
    assert pooled["p_value"] == pytest.approx(expected.pvalue)
    assert pooled["difference"] == pytest.approx(
        model_means("treated").mean() - model_means("control").mean()
    )


def test_a_group_of_one_model_is_compared_but_flagged() -> None:
    frames = _run_frames(np.random.default_rng(402), seeds=3, effect=0.0, questions=1)
    table = compare_groups(frames, "control", _aligned(frames))
    base = table[table["group"] == "base"].iloc[0]
    assert base["sampling_only"] and base["n_models"] == 1 and base["method"] == "cochran-cox"
    assert not (table["question"] == ALL_QUESTIONS).any()  # one question: nothing to pool


def test_an_unknown_baseline_names_the_groups_there_are() -> None:
    frames = _run_frames(np.random.default_rng(403), seeds=2, effect=0.0, questions=1)
    with pytest.raises(ValueError, match="baseline group 'gpt-4o' is not in the frames") as error:
        compare_groups(frames, "gpt-4o", _aligned(frames))
    assert "'control', 'treated', 'base'" in str(error.value)


def test_each_group_against_its_own_baseline_in_one_table_with_holm_over_all_rows() -> None:
    frames = _run_frames(np.random.default_rng(404), seeds=3, effect=24.0, questions=2)
    own = {"treated": "base", "control": "treated"}
    table = compare_groups(frames, own, _aligned(frames))
    pairs = set(zip(table["group"], table["baseline"], strict=True))
    assert pairs == {("treated", "base"), ("control", "treated")}
    assert np.allclose(table["p_adjusted"], holm(table["p_value"]))
    alone = compare_groups(frames, "base", _aligned(frames))
    treated = table[table["group"] == "treated"].reset_index(drop=True)
    against_base = alone[alone["group"] == "treated"].reset_index(drop=True)
    assert np.allclose(treated["difference"], against_base["difference"])
    assert np.allclose(treated["p_value"], against_base["p_value"])
    with pytest.raises(ValueError, match="baseline group 'gpt-4o' is not in the frames"):
        compare_groups(frames, {"treated": "gpt-4o"}, _aligned(frames))


def test_identical_groups_without_noise_differ_by_nothing() -> None:
    same = np.full(20, 100.0)
    result = compare_seeds(same, np.repeat(["a", "b"], 10), same, np.repeat(["c", "d"], 10))
    assert result.difference == 0.0 and result.p_value == 1.0


def _level_frames() -> dict[str, pd.DataFrame]:
    """Two questions asked of three seeds at two levels of `perspective` (0/1 answers), plus
    a fourth seed asked only at `neutral` and a group asked only at `tenant`."""
    rng = np.random.default_rng(0)
    rows = []
    for question in ("a", "b"):
        for model in ("s1", "s2", "s3"):
            for level, p in (("neutral", 0.3), ("tenant", 0.6)):
                rows += [(question, "g", model, level, float(rng.random() < p)) for _ in range(10)]
        rows += [(question, "g", "s4", "neutral", 1.0)] * 10
        rows += [(question, "other", "x1", "tenant", 0.0)] * 10
    frame = pd.DataFrame(rows, columns=["q", "group", "model", "perspective", "answer"])
    return {q: f.drop(columns="q").reset_index(drop=True) for q, f in frame.groupby("q")}


def test_a_shares_levels_are_a_paired_t_over_models_at_both_levels_and_over_questions() -> None:
    frames = _level_frames()
    scales = {q: {"answer": SHARE} for q in frames}
    table = compare_levels(frames, "perspective", "neutral", scales=scales)
    # `other` has no baseline level, so no row; s4 answered `neutral` only, so it takes no part.
    assert set(table["group"]) == {"g"}
    assert table["question"].tolist() == ["a", "b", ALL_QUESTIONS]
    assert (table["n_models"] == 3).all() and (table["method"] == "paired-t").all()
    both = pd.concat(frames, names=["q"]).reset_index(level=0)
    both = both[(both["group"] == "g") & (both["model"] != "s4")]
    per = both.groupby(["q", "model", "perspective"])["answer"].mean().unstack("perspective")
    differences = per["tenant"] - per["neutral"]
    expected = {q: differences.xs(q, level="q") for q in ("a", "b")}
    expected[ALL_QUESTIONS] = differences.groupby(level="model").mean()
    for row in table.itertuples():
        paired = expected[row.question]
        assert row.difference == pytest.approx(paired.mean())
        assert row.p_value == pytest.approx(scipy_stats.ttest_1samp(paired, 0).pvalue)
        low, high = scipy_stats.t.interval(0.95, len(paired) - 1, paired.mean(), paired.sem())
        assert (row.ci_low, row.ci_high) == (pytest.approx(low), pytest.approx(high))
