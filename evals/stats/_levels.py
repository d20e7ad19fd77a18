"""A grid factor's levels compared within each group, paired within models (each model's own
difference is one observation; docs/design/statistics.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evals.stats._compare import DIFFERENCE_COLUMNS, Difference, difference_row, holm, t_test
from evals.stats._frames import ALL_QUESTIONS, Cell, Pool, Score, ScoreScales, score_cells
from evals.stats._metrics import Metric
from evals.stats._seeds import SeedMeans, seed_means

LEVEL_COMPARISON_COLUMNS = [
    *("question", "score", "group", "factor", "level", "baseline_level"),
    *(column for column in DIFFERENCE_COLUMNS if column != "n_models_baseline"),
]
"""`difference` = `mean` (the group at `level`) − `mean_baseline` (at `baseline_level`),
paired within models; `method` `paired-t` (seeds) or `sampling` (one model)."""


def _within(level: SeedMeans, baseline: SeedMeans) -> tuple[float, int]:
    """Pooled within-model variance of one sample over both levels, and its degrees of
    freedom."""
    df = level.within_df + baseline.within_df
    if level.share:
        n = level.n_samples + baseline.n_samples
        successes = level.mean * level.n_samples + baseline.mean * baseline.n_samples
        p = (successes + 0.5) / (n + 1)
        return p * (1 - p), df
    parts = [
        (s.within_variance, s.within_df)
        for s in (level, baseline)
        if s.within_df > 0 and not math.isnan(s.within_variance)
    ]
    if not parts:
        return math.nan, 0
    return sum(v * d for v, d in parts) / sum(d for _, d in parts), df


def paired_difference(
    level: SeedMeans, baseline: SeedMeans, *, confidence: float = 0.95
) -> Difference:
    """The paired difference of two levels' seed means (the same models, in the same order:
    see `compare_levels`): the models' differences are seed means of their own."""
    within, within_df = _within(level, baseline)
    pairs = SeedMeans(
        level.means - baseline.means,
        level.variances + baseline.variances,
        level.inverse_sizes + baseline.inverse_sizes,
        within,
        within_df,
        level.n_samples + baseline.n_samples,
        share=False,
    )
    k = pairs.n_models
    low, high, p_value = t_test(pairs.mean, [pairs.variance()], True, confidence)
    method = "sampling" if k == 1 else "paired-t"
    return Difference(level.mean, baseline.mean, pairs.mean, low, high, p_value, k, k, method)


def _valid_models(cell: Pool) -> set[Any]:
    values, models, _ = cell.arrays()
    return set(models[~np.isnan(values)].tolist())


def _seeds(cell: Pool, keep: set[Any], order: Mapping[Any, int]) -> SeedMeans:
    """The cell's seed means of the models in `keep`, in `order` (one order on both sides)."""
    values, models, questions = cell.arrays()
    mask = np.array([m in keep for m in models], dtype=bool) & ~np.isnan(values)
    sort = np.argsort([order[m] for m in models[mask]], kind="stable")
    chosen = (values[mask][sort], models[mask][sort], questions[mask][sort])
    return seed_means(*chosen, share=cell.scale.is_share)


def compare_levels(
    frames: Mapping[str, pd.DataFrame],
    factor: str,
    baseline_level: str,
    scores: Mapping[str, Sequence[Score]] | None = None,
    *,
    metrics: Iterable[Metric] = (),
    scales: ScoreScales | None = None,
    confidence: float = 0.95,
    pooled: bool = True,
) -> pd.DataFrame:
    """Within each group, each level of `factor` against `baseline_level`, per question
    (that has the factor) × score, plus a row per score over those questions (`question` =
    `ALL_QUESTIONS`, when two or more have the factor). Columns `LEVEL_COMPARISON_COLUMNS`;
    paired within models (see the module docstring); `p_adjusted` is Holm over all rows.
    Only models that answered at both levels take part. `scores`, `metrics`, `scales` as in
    `summarize`."""
    having = {q: f for q, f in frames.items() if factor in f.columns}
    if not having:
        raise ValueError(f"no frame has the factor {factor!r} (a grid question's column)")
    levels_seen: dict[str, None] = {}
    for frame in having.values():
        levels_seen.update(dict.fromkeys(frame[factor].astype(str)))
    if str(baseline_level) not in levels_seen:
        known = ", ".join(repr(level) for level in levels_seen)
        raise ValueError(f"factor {factor!r} has no level {baseline_level!r} (its levels: {known})")
    baseline_level = str(baseline_level)
    cells, _ = score_cells(having, scores, metrics, scales, [factor])
    found: dict[tuple[str, str], dict[tuple[str, str], Cell]] = {}
    for cell in cells:
        key = (str(cell.group), str(cell.levels[0]))
        found.setdefault((cell.question, cell.name), {})[key] = cell
    rows: list[dict[str, Any]] = []
    pools: dict[tuple[str, str, str], Pool] = {}
    for (question, name), of_question in found.items():
        groups = dict.fromkeys(having[question]["group"].astype(str))
        parts = {}  # by group, then level
        for key in ((g, level) for g in groups for level in levels_seen):
            if key in of_question:
                cell = of_question[key]
                parts[key] = Pool(cell.scale).add(cell)
                pools.setdefault((name, *key), Pool(cell.scale)).add(cell)
        rows.extend(_rows(question, name, factor, baseline_level, parts, confidence))
    for name in dict.fromkeys(n for n, _, _ in pools) if pooled and len(having) >= 2 else ():
        parts = {(g, level): pool for (n, g, level), pool in pools.items() if n == name}
        if any(p.mixed for p in parts.values()) or max(len(p.cells) for p in parts.values()) < 2:
            continue  # rows over all questions: for a score asked in two or more, on one scale
        rows.extend(_rows(ALL_QUESTIONS, name, factor, baseline_level, parts, confidence))
    table = pd.DataFrame(rows, columns=LEVEL_COMPARISON_COLUMNS)
    table["p_adjusted"] = holm(table["p_value"].to_numpy(dtype=float))
    return table


def _rows(
    question: str,
    score: str,
    factor: str,
    baseline_level: str,
    cells: Mapping[tuple[str, str], Pool],
    confidence: float,
) -> list[dict[str, Any]]:
    """Each group's levels against its `baseline_level` (`cells` by group and level), in the
    order of the groups and then their levels."""
    rows = []
    for group in dict.fromkeys(group for group, _ in cells):
        reference = cells.get((group, baseline_level))
        if reference is None:
            continue
        seen = dict.fromkeys(m for c in reference.cells for m in c.models.tolist())
        order = {m: i for i, m in enumerate(seen)}
        for (other_group, level), cell in cells.items():
            if other_group != group or level == baseline_level:
                continue
            if both := _valid_models(reference) & _valid_models(cell):
                sides = (_seeds(cell, both, order), _seeds(reference, both, order))
                result = paired_difference(*sides, confidence=confidence)
                names = (question, score, group, factor, level, baseline_level)
                row = dict(zip(LEVEL_COMPARISON_COLUMNS, names, strict=False))
                rows.append(row | difference_row(result, reference.scale))
    return rows
