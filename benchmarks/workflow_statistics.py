"""Benchmark: do the workflows' intervals hold their level?

1. A grid factor's levels compared within a group (`compare_levels`, paired within models):
   coverage of the truth with 1, 3, 5 and 10 seeds, with and without a model × level
   interaction (SD 3; seed SD 8, sample SD 20, 20 samples per model and level). With seeds
   the truth is the recipe's effect; with one model, that model's own difference. As the
   baseline measured in the same run: an unpaired Welch comparison of the two levels' seed
   means (`difference_of`), which ignores the pairing.
2. A judge against human labels: coverage of Spearman's rho (Fisher z, Bonett-Wright) and of
   Cohen's kappa (BCa bootstrap, bins cut at 30; an interval only when each bin holds 5
   answers of both), with 50, 100 and 200 labelled answers; and the large-sample kappa
   interval of Fleiss, Cohen and Everitt as the baseline.

    python benchmarks/workflow_statistics.py [--experiments 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import special

from evals.stats import Threshold, difference_of, seed_means, spearman_interval
from evals.stats._agreement import Bins, _kappa, cohen_kappa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tools/
from tools.stats_simulation import LABEL_SCENARIOS, level_difference_covers


def _rate(hits: int, experiments: int) -> str:
    if experiments == 0:
        return "n/a"
    share = hits / experiments
    margin = 1.96 * math.sqrt(max(share * (1 - share), 1e-9) / experiments)
    return f"{100 * share:.1f}% ±{100 * margin:.1f}"


def _unpaired_covers(rng: np.random.Generator, seeds: int, interaction: float) -> bool:
    overall = rng.normal(0.0, 8.0, seeds)
    own = rng.normal(0.0, interaction, (seeds, 2))
    models = np.repeat(np.array([f"m{i}" for i in range(seeds)]), 20)
    base = rng.normal(np.repeat(50.0 + overall + own[:, 0], 20), 20.0)
    level = rng.normal(np.repeat(50.0 + overall + own[:, 1], 20), 20.0)
    found = difference_of(seed_means(level, models), seed_means(base, models))
    return bool(found.low <= 0.0 <= found.high)


def levels(experiments: int, rng: np.random.Generator) -> None:
    print(f"\n## Levels within a group ({experiments:,} experiments each)\n")
    print("| interaction SD | method | 1 model | 3 seeds | 5 seeds | 10 seeds |")
    print("|---|---|---|---|---|---|")
    for interaction in (0.0, 3.0):
        paired = [
            _rate(
                sum(
                    level_difference_covers(rng, seeds, interaction_sd=interaction)
                    for _ in range(experiments)
                ),
                experiments,
            )
            for seeds in (1, 3, 5, 10)
        ]
        print(f"| {interaction:g} | paired (chosen) | " + " | ".join(paired) + " |")
        unpaired = [
            _rate(
                sum(_unpaired_covers(rng, seeds, interaction) for _ in range(experiments)),
                experiments,
            )
            for seeds in (3, 5, 10)
        ]
        print(f"| {interaction:g} | unpaired Welch | n/a | " + " | ".join(unpaired) + " |")


def _fce(judge: np.ndarray, human: np.ndarray) -> tuple[float, float]:
    """The large-sample interval of Fleiss, Cohen and Everitt (two bins)."""
    n = len(judge)
    p = np.zeros((2, 2))
    np.add.at(p, (judge, human), 1.0 / n)
    r, c = p.sum(1), p.sum(0)
    po, pe = float(np.trace(p)), float(r @ c)
    if pe >= 1:
        return math.nan, math.nan
    kappa = (po - pe) / (1 - pe)
    spread = np.eye(2) - (r[:, None] + c[None, :]) * (1 - kappa)
    variance = (float((p * spread**2).sum()) - (kappa - pe * (1 - kappa)) ** 2) / (
        n * (1 - pe) ** 2
    )
    half = float(special.ndtri(0.975)) * math.sqrt(max(variance, 0.0))
    return kappa - half, kappa + half


def labels(experiments: int, rng: np.random.Generator) -> None:
    print(f"\n## A judge against human labels ({experiments:,} experiments each)\n")
    print("| setting | answers | rho (Fisher z) | kappa (BCa) | kappa given | kappa (FCE) |")
    print("|---|---|---|---|---|---|")
    bins = Bins((Threshold("aligned", "<", 30.0),))
    for setting in LABEL_SCENARIOS.values():
        judge, human = setting.draw(np.random.default_rng(0), 400_000)
        true_rho = spearman_interval(judge, human)[0]
        true_kappa = float(_kappa(bins.of(judge), bins.of(human), 2))
        for n in (50, 100, 200):
            rho = kappa = given = fce = 0
            for _ in range(experiments):
                j, h = setting.draw(rng, n)
                found = spearman_interval(j, h)
                rho += found[1] <= true_rho <= found[2]
                bj, bh = bins.of(j), bins.of(h)
                _, low, high, _ = cohen_kappa(bj, bh, 2)
                if not math.isnan(low):
                    given += 1
                    kappa += low <= true_kappa <= high
                    f_low, f_high = _fce(bj, bh)
                    fce += f_low <= true_kappa <= f_high
            print(
                f"| {setting.description} | {n} | {_rate(rho, experiments)} | "
                f"{_rate(kappa, given)} | {100 * given / experiments:.0f}% | {_rate(fce, given)} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    levels(args.experiments, rng)
    labels(args.experiments, rng)


if __name__ == "__main__":
    main()
