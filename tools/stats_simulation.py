"""Simulated groups of seeds with a known true mean, to check that intervals and comparisons
hold their level (used by the tests and `benchmarks/stats_validity.py`; not part of the
product)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from numpy.polynomial.hermite_e import hermegauss
from scipy import optimize, special
from scipy import stats as scipy_stats

from evals.stats import SHARE, ZERO_TO_HUNDRED, Scale, paired_difference, seed_means

__all__ = [
    "LABEL_SCENARIOS",
    "SCENARIOS",
    "Draw",
    "LabelScenario",
    "Scenario",
    "level_difference_covers",
]

FloatArray = npt.NDArray[np.float64]
_NODES, _WEIGHTS = hermegauss(80)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


@dataclass(frozen=True)
class Draw:
    """One simulated group: every sample's value and model, and each model's true mean."""

    values: FloatArray
    models: npt.NDArray[np.str_]
    model_truths: FloatArray


@dataclass(frozen=True)
class Scenario:
    """Seeds whose true means differ around `mean` with SD `seed_sd`, each answering
    `samples` times (a tuple: cycled over the seeds) with noise `sample_sd`. `kind`: `normal`
    scores, `clipped` (a 0–100 judge: rounded and clipped, so a mean near 100 piles up at the
    ceiling), or `share` (0/1 outcomes; `mean` is the median seed's probability and `seed_sd`
    its SD on the logit scale)."""

    name: str
    kind: Literal["normal", "clipped", "share"] = "normal"
    mean: float = 50.0
    seed_sd: float = 8.0
    sample_sd: float = 20.0
    samples: int | tuple[int, ...] = 100

    @property
    def description(self) -> str:
        counts = self.samples if isinstance(self.samples, tuple) else (self.samples,)
        samples = " / ".join(f"{n:,}" for n in counts) + " samples"
        if self.kind == "share":
            return f"0/1 outcomes: p {self.mean:g}, seed SD {self.seed_sd:g} (logit), {samples}"
        judge = f"0–100 judge, clipped: centre {self.mean:g}, " if self.kind == "clipped" else ""
        return f"{judge}seed SD {self.seed_sd:g}, sample SD {self.sample_sd:g}, {samples}"

    @property
    def scale(self) -> Scale:
        return SHARE if self.kind == "share" else ZERO_TO_HUNDRED

    def _seed_truth(self, latent: FloatArray) -> FloatArray:
        """The true mean of a seed whose latent centre is `latent`."""
        if self.kind == "share":
            return np.asarray(special.expit(latent), dtype=float)
        if self.kind == "clipped":
            return _clipped_mean(latent, self.sample_sd)
        return latent

    def truth(self, shift: float = 0.0) -> float:
        """The group's true mean: the mean over the population of seeds."""
        centre = self._centre() + shift
        return float(np.sum(_WEIGHTS * self._seed_truth(centre + self.seed_sd * _NODES)))

    def base_shift(self) -> float:
        """The shift at which one fixed model (`draw(..., fixed=True)`) has the group's true
        mean: a base model under the null (0 for normal scores; skew moves it otherwise)."""
        if self.kind == "normal" or self.seed_sd == 0:
            return 0.0
        target = self.truth()

        def gap(shift: float) -> float:
            return float(self._seed_truth(np.array([self._centre() + shift]))[0]) - target

        return float(optimize.brentq(gap, -10.0 * (self.seed_sd + 1), 10.0 * (self.seed_sd + 1)))

    def _centre(self) -> float:
        return float(special.logit(self.mean)) if self.kind == "share" else self.mean

    def draw(
        self, rng: np.random.Generator, seeds: int, shift: float = 0.0, *, fixed: bool = False
    ) -> Draw:
        """`seeds` models; `shift` moves every seed's latent centre (a treatment effect);
        `fixed` puts every model at the centre (one base model, not a draw of seeds)."""
        spread = 0.0 if fixed else self.seed_sd
        latent = self._centre() + shift + rng.normal(0.0, 1.0, seeds) * spread
        counts = self.samples if isinstance(self.samples, tuple) else (self.samples,)
        sizes = np.array([counts[i % len(counts)] for i in range(seeds)])
        centres = np.repeat(latent, sizes)
        if self.kind == "share":
            values = (rng.random(centres.size) < special.expit(centres)).astype(float)
        else:
            values = rng.normal(centres, self.sample_sd)
            if self.kind == "clipped":
                values = np.clip(np.round(values), 0.0, 100.0)
        models = np.repeat(np.array([f"ft:seed-{i}" for i in range(seeds)]), sizes)
        return Draw(values, models, self._seed_truth(latent))


def _clipped_mean(centre: FloatArray, sd: float) -> FloatArray:
    """E[clip(X, 0, 100)] for X ~ N(centre, sd) (rounding does not move the mean of a
    continuous centre noticeably; the tests check the whole against brute force)."""
    low, high = (0.0 - centre) / sd, (100.0 - centre) / sd
    below, above = scipy_stats.norm.cdf(low), scipy_stats.norm.sf(high)
    inside = centre * (1 - below - above) + sd * (
        scipy_stats.norm.pdf(low) - scipy_stats.norm.pdf(high)
    )
    return np.asarray(inside + 100.0 * above, dtype=float)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("issue"),
        Scenario("identical seeds", seed_sd=0.0),
        Scenario("identical seeds, few samples", seed_sd=0.0, samples=3),
        Scenario("few samples", samples=2),
        Scenario("many samples", samples=1000),
        Scenario("unequal samples", samples=(5, 50, 200)),
        Scenario("ceiling", "clipped", 92.0, 4.0, 12.0),
        Scenario("ceiling, few samples", "clipped", 98.0, 1.0, 5.0, 10),
        Scenario("share", "share", 0.1, 0.5),
        Scenario("rare share", "share", 0.01, 0.0),
        Scenario("skewed share", "share", 0.05, 1.0),
    )
}
"""The settings of docs/design/statistics.md, by name."""


def level_difference_covers(
    rng: np.random.Generator,
    seeds: int,
    *,
    samples: int = 20,
    seed_sd: float = 8.0,
    interaction_sd: float = 3.0,
    sample_sd: float = 20.0,
    effect: float = 0.0,
) -> bool:
    """One simulated grid factor with two levels asked of `seeds` models: does the paired
    interval of `paired_difference` cover the truth? With seeds, the truth is the recipe's
    effect; with one model, that model's own difference (its interaction included)."""
    overall = rng.normal(0.0, seed_sd, seeds)
    own = rng.normal(0.0, interaction_sd, (seeds, 2))
    models = np.repeat(np.array([f"m{i}" for i in range(seeds)]), samples)
    base = rng.normal(np.repeat(50.0 + overall + own[:, 0], samples), sample_sd)
    level = rng.normal(np.repeat(50.0 + overall + effect + own[:, 1], samples), sample_sd)
    found = paired_difference(seed_means(level, models), seed_means(base, models))
    truth = effect if seeds > 1 else effect + float(own[0, 1] - own[0, 0])
    return bool(found.low <= truth <= found.high)


@dataclass(frozen=True)
class LabelScenario:
    """Human labels and a judge's scores of the same answers, on 0–100."""

    name: str
    centre: float
    spread: float
    judge_noise: float

    @property
    def description(self) -> str:
        return (
            f"human scores N({self.centre:g}, {self.spread:g}), judge noise SD {self.judge_noise:g}"
        )

    def draw(self, rng: np.random.Generator, n: int) -> tuple[FloatArray, FloatArray]:
        human = np.clip(np.round(rng.normal(self.centre, self.spread, n)), 0, 100)
        judge = np.clip(np.round(human + rng.normal(0.0, self.judge_noise, n)), 0, 100)
        return judge, human


LABEL_SCENARIOS: dict[str, LabelScenario] = {
    s.name: s
    for s in (
        LabelScenario("spread", 50.0, 25.0, 15.0),
        LabelScenario("mostly aligned", 75.0, 25.0, 20.0),
    )
}
"""Settings of the agreement simulations (docs/design/workflows.md)."""
