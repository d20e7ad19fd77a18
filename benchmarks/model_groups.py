"""Benchmark: model_groups and select_models over 10,000 models in a SQLite file.

The lab: 50 suffixes (10 conditions × 5 datasets) × 40 seeds = 2,000 succeeded jobs, each
with a final model and 4 checkpoints = 10,000 models. Each jobs_db call is timed against a
baseline in the same run: a hand-written sqlite3 query returning the same rows, grouped and
sorted the same way in plain Python. Prints the best of ``--repeat`` runs and the ratio.

    python benchmarks/model_groups.py [--repeat 5] [--path lab.db]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jobs_db import (
    Database,
    FinetuneJob,
    Model,
    model_groups,
    open_database,
    replace_checkpoints,
    select_models,
    upsert_job,
)

BASE = "gpt-4.1-mini-2025-04-14"
CONDITIONS = [f"cond{c}" for c in range(10)]
DATASETS = [f"data{d}" for d in range(5)]
SEEDS = 40
CHECKPOINTS = 4
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def build(db: Database) -> int:
    """Fill the database; return the number of model rows."""
    number = 0
    with db.session() as session:
        for condition in CONDITIONS:
            for dataset in DATASETS:
                suffix = f"{condition}-{dataset}"
                for seed in range(SEEDS):
                    number += 1
                    job_id = f"ftjob-{number:05d}"
                    final = f"ft:{BASE}:lab:{suffix}:{number:08d}"
                    created = T0 + timedelta(minutes=number)
                    upsert_job(
                        session,
                        FinetuneJob(
                            id=job_id,
                            status="succeeded",
                            base_model="gpt-4.1-mini",
                            resolved_base_model=BASE,
                            suffix=suffix,
                            seed=seed,
                            created_at=created,
                            finished_at=created + timedelta(hours=2),
                            fine_tuned_model=final,
                        ),
                        tags={"condition": condition, "dataset": dataset, "seed": str(seed)},
                    )
                    replace_checkpoints(
                        session,
                        job_id,
                        [
                            Model(
                                name=f"{final}:ckpt-step-{step}",
                                step=step,
                                epoch=step // 10,
                                created_at=created + timedelta(hours=1, minutes=step),
                                metrics={"train_loss": 1.0 / step},
                            )
                            for step in range(10, 10 * CHECKPOINTS + 1, 10)
                        ],
                    )
    return number * (CHECKPOINTS + 1)


def _sort_key(created: str | None, name: str) -> tuple[bool, str, str]:
    return (created is not None, created or "", name)


def raw_groups(path: Path, tag: str | None) -> dict[str, list[str]]:
    """Baseline for model_groups: one hand-written query, grouping and sorting in Python."""
    connection = sqlite3.connect(path)
    if tag is None:
        rows = connection.execute(
            "SELECT m.suffix, m.name, m.created_at FROM models m "
            "LEFT JOIN finetune_jobs j ON j.id = m.job_id "
            "WHERE m.kind IN ('final', 'checkpoint') "
            "AND (m.base_model = ? OR j.base_model = ? OR j.resolved_base_model = ?)",
            (BASE, BASE, BASE),
        ).fetchall()
    else:
        rows = connection.execute(
            "SELECT t.value, m.name, m.created_at FROM models m "
            "LEFT JOIN job_tags t ON t.job_id = m.job_id AND t.key = ? "
            "WHERE m.kind IN ('final', 'checkpoint')",
            (tag,),
        ).fetchall()
    connection.close()
    members: dict[str, list[tuple[Any, str]]] = defaultdict(list)
    for group, name, created in rows:
        if group:
            members[group].append((_sort_key(created, name), name))
    groups = {group: [name for _, name in sorted(items)] for group, items in members.items()}
    groups[BASE] = [BASE]
    return dict(sorted(groups.items()))


def raw_models(path: Path, suffix_like: str | None, tag: tuple[str, str] | None) -> list[tuple]:
    """Baseline for select_models: every model and job column of the same rows, sorted."""
    connection = sqlite3.connect(path)
    sql = (
        "SELECT m.*, j.* FROM models m LEFT JOIN finetune_jobs j ON j.id = m.job_id "
        "WHERE m.kind IN ('final', 'checkpoint')"
    )
    params: list[str] = []
    if suffix_like is not None:
        sql += " AND m.suffix LIKE ?"
        params.append(suffix_like)
    if tag is not None:
        sql += (
            " AND EXISTS (SELECT 1 FROM job_tags t WHERE t.job_id = m.job_id "
            "AND t.key = ? AND t.value = ?)"
        )
        params.extend(tag)
    rows = connection.execute(sql, params).fetchall()
    connection.close()
    return sorted(rows, key=lambda row: _sort_key(row[11], row[0]))


def best(function: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--path", type=Path, help="SQLite file to create (default: temporary)")
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory()
    path = args.path or Path(folder.name) / "bench.db"
    path.unlink(missing_ok=True)
    db = open_database(path)
    start = time.perf_counter()
    count = build(db)
    print(f"built {count} models in {time.perf_counter() - start:.1f} s ({path})")

    def condition_of(model: Model) -> str | None:
        return model.job.tag_dict.get("condition") if model.job else None

    cases: list[tuple[str, Callable[[], object], Callable[[], object], int]] = [
        (
            "model_groups(by='suffix', base_model, checkpoints=True)",
            lambda: model_groups(db, base_model=BASE, checkpoints=True),
            lambda: raw_groups(path, None),
            0,
        ),
        (
            "model_groups(by='tag:condition', checkpoints=True)",
            lambda: model_groups(db, by="tag:condition", base_model=BASE, checkpoints=True),
            lambda: raw_groups(path, "condition"),
            0,
        ),
        (
            "model_groups(by=<function>, checkpoints=True)",
            lambda: model_groups(db, by=condition_of, base_model=BASE, checkpoints=True),
            lambda: raw_groups(path, "condition"),
            0,
        ),
        (
            "select_models(checkpoints=True) -> 10,000 rows",
            lambda: select_models(db, checkpoints=True),
            lambda: raw_models(path, None, None),
            1,
        ),
        (
            "select_models(suffix='cond3-*', tags={'seed': '7'})",
            lambda: select_models(db, suffix="cond3-*", tags={"seed": "7"}, checkpoints=True),
            lambda: raw_models(path, "cond3-%", ("seed", "7")),
            1,
        ),
    ]
    print(f"{'call':58} {'jobs_db':>9} {'raw SQL':>9} {'ratio':>6}")
    ratios = []
    for label, ours, baseline, compare_lengths in cases:
        ours_time, ours_result = best(ours, args.repeat)
        raw_time, raw_result = best(baseline, args.repeat)
        if compare_lengths:
            assert len(ours_result) == len(raw_result), label  # type: ignore[arg-type]
        else:
            assert ours_result == raw_result, f"{label}: results differ from the baseline"
        ratios.append(ours_time / raw_time)
        print(f"{label:58} {ours_time * 1e3:7.1f}ms {raw_time * 1e3:7.1f}ms {ratios[-1]:5.1f}x")
    print(f"median ratio {statistics.median(ratios):.1f}x (best of {args.repeat} runs each)")
    db.close()
    folder.cleanup()


if __name__ == "__main__":
    main()
