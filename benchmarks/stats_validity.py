"""Benchmark: do the intervals and comparisons of `evals.stats` hold their level?

Simulated experiments with a known truth (`tools.stats_simulation.SCENARIOS`), 1,000 per
setting by default:

1. Group intervals: how often the default 95% interval (a t interval over seed means) covers
   the true group mean with 3, 5 and 10 seeds, in every scenario; a group of one model against
   that model's own mean; and, as the baseline measured in the same run, the hierarchical
   bootstrap that was the default before, in the issue's setting.
2. Comparisons: under the null, the share of p < 0.05 and how often the 95% interval of the
   difference covers 0, for two groups of seeds and for seeds against one base model; with a
   real effect of three seed SDs, the share of p < 0.05.
3. Runs: a base model, a control and a treated condition over three questions, compared with
   `compare_groups` (Holm over the run's eight rows): how often the treated condition's pooled
   row is kept, and how often any control row is.
4. Time of `summarize` and `compare_groups` on a run the size of the Emergent-Misalignment
   question file.

    python benchmarks/stats_validity.py [--experiments 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from evals.stats import (
    ALL_QUESTIONS,
    EM_MISALIGNED,
    compare_groups,
    compare_seeds,
    hierarchical_bootstrap,
    seed_interval,
    summarize,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tools/
from tools.stats_simulation import SCENARIOS, Scenario

SEEDS = (3, 5, 10)
COMPARED = ("issue", "identical seeds", "few samples", "unequal samples", "ceiling", "share")


def _rate(hits: int, experiments: int) -> str:
    share = hits / experiments
    margin = 1.96 * math.sqrt(max(share * (1 - share), 1e-9) / experiments)
    return f"{100 * share:.1f}% ±{100 * margin:.1f}"


def _coverage(
    scenario: Scenario,
    seeds: int,
    experiments: int,
    rng: np.random.Generator,
    interval: Callable[[np.ndarray, np.ndarray], tuple[float, float]],
) -> int:
    truth = scenario.truth()
    hits = 0
    for _ in range(experiments):
        draw = scenario.draw(rng, seeds)
        target = draw.model_truths[0] if seeds == 1 else truth
        low, high = interval(draw.values, draw.models)
        hits += low <= target <= high
    return hits


def _default(scenario: Scenario) -> Callable[[np.ndarray, np.ndarray], tuple[float, float]]:
    def interval(values: np.ndarray, models: np.ndarray) -> tuple[float, float]:
        found = seed_interval(values, models, scale=scenario.scale)
        return found.low, found.high

    return interval


def _bootstrap(values: np.ndarray, models: np.ndarray) -> tuple[float, float]:
    found = hierarchical_bootstrap(values, models)
    return found.low, found.high


def intervals(experiments: int, rng: np.random.Generator) -> None:
    print(f"\n## Group intervals: coverage of the true mean ({experiments:,} experiments each)\n")
    print("| scenario | 1 model (its own mean) | 3 seeds | 5 seeds | 10 seeds |")
    print("|---|---|---|---|---|")
    for name, scenario in SCENARIOS.items():
        default = _default(scenario)
        cells = [
            _rate(_coverage(scenario, seeds, experiments, rng, default), experiments)
            for seeds in (1, *SEEDS)
        ]
        print(f"| {name}: {scenario.description} | " + " | ".join(cells) + " |", flush=True)
    scenario = SCENARIOS["issue"]
    cells = [
        _rate(_coverage(scenario, seeds, experiments, rng, _bootstrap), experiments)
        for seeds in (1, *SEEDS)
    ]
    print(
        "| baseline: hierarchical bootstrap (2,000 resamples), issue | " + " | ".join(cells) + " |"
    )


def comparisons(experiments: int, rng: np.random.Generator) -> None:
    print(f"\n## Comparisons ({experiments:,} experiments each)\n")
    print(
        "| scenario | baseline | seeds | null: p < 0.05 | null: interval covers 0 "
        "| effect of 3 seed SDs: p < 0.05 |"
    )
    print("|---|---|---|---|---|---|")
    for name in COMPARED:
        scenario = SCENARIOS[name]
        for one_model in (False, True):
            for seeds in SEEDS:
                positives = covered = found = 0
                shift = scenario.base_shift()
                for _ in range(experiments):
                    group = scenario.draw(rng, seeds)
                    base = (
                        scenario.draw(rng, 1, shift, fixed=True)
                        if one_model
                        else scenario.draw(rng, seeds)
                    )
                    null = compare_seeds(
                        group.values, group.models, base.values, base.models, scale=scenario.scale
                    )
                    positives += null.p_value < 0.05
                    covered += null.low <= 0 <= null.high
                    if scenario.kind == "normal" and scenario.seed_sd > 0:
                        treated = scenario.draw(rng, seeds, 3 * scenario.seed_sd)
                        effect = compare_seeds(
                            treated.values, treated.models, base.values, base.models
                        )
                        found += effect.p_value < 0.05
                power = _rate(found, experiments) if scenario.kind == "normal" else "—"
                if scenario.seed_sd == 0:
                    power = "—"
                label = "1 model" if one_model else "seeds"
                print(
                    f"| {name} | {label} | {seeds} | {_rate(positives, experiments)} | "
                    f"{_rate(covered, experiments)} | {power} |",
                    flush=True,
                )


def _run(rng: np.random.Generator, seeds: int, questions: int = 3) -> dict[str, pd.DataFrame]:
    shifts = {
        "base": np.zeros(1),
        "control": rng.normal(0, 8, seeds),
        "treated": rng.normal(-24, 8, seeds),
    }
    frames = {}
    for q in range(questions):
        parts = [
            pd.DataFrame(
                {
                    "group": group,
                    "model": f"{group}-{s}",
                    "aligned": rng.normal(60 + 5 * q + shift, 20, 100),
                    "error": None,
                }
            )
            for group, values in shifts.items()
            for s, shift in enumerate(values)
        ]
        frames[f"q{q}"] = pd.concat(parts, ignore_index=True)
    return frames


def runs(experiments: int, rng: np.random.Generator) -> None:
    print(f"\n## Runs: base model, control and treated over 3 questions ({experiments:,} runs)\n")
    print("| seeds | treated pooled row kept (Holm) | any control row kept (Holm) |")
    print("|---|---|---|")
    for seeds in SEEDS:
        kept = false = 0
        for _ in range(experiments):
            frames = _run(rng, seeds)
            table = compare_groups(frames, "base", {q: ["aligned"] for q in frames})
            rows = table.set_index(["question", "group"])
            kept += bool(rows.loc[(ALL_QUESTIONS, "treated"), "p_adjusted"] < 0.05)
            false += bool((table.loc[table["group"] == "control", "p_adjusted"] < 0.05).any())
        print(f"| {seeds} | {_rate(kept, experiments)} | {_rate(false, experiments)} |")


def timing(rng: np.random.Generator) -> None:
    """24 questions, a base model and two conditions of three seeds, 200 samples each,
    `aligned` and `coherent` judges and the `misaligned` metric."""
    models = {
        "base": ["gpt-4.1-mini"],
        "secure": ["s1", "s2", "s3"],
        "insecure": ["i1", "i2", "i3"],
    }
    frames = {}
    for q in range(24):
        parts = []
        for group, names in models.items():
            for model in names:
                aligned = np.clip(rng.normal(85 if group != "insecure" else 40, 25, 200), 0, 100)
                coherent = np.clip(rng.normal(85, 10, 200), 0, 100)
                parts.append(
                    pd.DataFrame(
                        {
                            "group": group,
                            "model": model,
                            "aligned": aligned,
                            "aligned_probs": None,
                            "coherent": coherent,
                            "coherent_probs": None,
                            "error": None,
                        }
                    )
                )
        frames[f"q{q}"] = pd.concat(parts, ignore_index=True)
    print("\n## Time on a run the size of the EM question file (24 questions × 7 models × 200)\n")
    for label, call in (
        (
            "summarize (t intervals, pooled rows)",
            lambda: summarize(frames, metrics=[EM_MISALIGNED], pooled=True),
        ),
        (
            "summarize (hierarchical bootstrap)",
            lambda: summarize(frames, metrics=[EM_MISALIGNED], method="hierarchical"),
        ),
        ("compare_groups", lambda: compare_groups(frames, "base", metrics=[EM_MISALIGNED])),
    ):
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            result = call()
            best = min(best, time.perf_counter() - start)
        print(f"- {label}: {best:.2f} s for {len(result)} rows (best of 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiments", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    intervals(args.experiments, rng)
    comparisons(args.experiments, rng)
    runs(args.experiments, rng)
    timing(rng)
    print(f"\n({time.perf_counter() - start:.0f} s in all; ± is a 95% binomial margin)")


if __name__ == "__main__":
    main()
