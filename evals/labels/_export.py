"""`export_labels`: a seeded, stratified sample of a run's labellable answers (free-form text
with a score, each sample once, with its stable id) for labellers, in spreadsheet-safe cells.

A cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return would be read as a formula,
so it is written with one `'` in front; text already quoted before such a character gets one
more, so `restore` removes exactly one."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from evals.errors import OutputError, RunOptionsError, why_not_writable
from evals.questions import read_rows
from evals.runs import HUMAN_PREFIX, Run, id_key, load_run, sample_ids, write_run_file
from evals.stats import Scale, score_scale


@dataclass(frozen=True)
class Candidates:
    """The labellable samples (`table`) and each question's scores with their scales."""

    table: pd.DataFrame
    """id, question, model, group (the groups it is in, joined), paraphrase_ix, sample_ix,
    prompt, answer, and each grid factor of its question."""
    scores: dict[str, dict[str, Scale]]
    """question → score → scale: what a label of the question's samples may give."""

    def score_names(self) -> list[str]:
        return list(dict.fromkeys(s for scores in self.scores.values() for s in scores))

    def label_columns(self) -> list[str]:
        return [f"{HUMAN_PREFIX}{name}" for name in self.score_names()]


def candidates(run: Run) -> Candidates:
    """Every labellable sample of `run`; the run's id key goes into run.json when first needed."""
    key, new = id_key(run.info)
    if new:
        run.info["labels"] = {**dict(run.info.get("labels") or {}), "id_key": key.hex()}
        write_run_file(run.path, run.info)
    parts: list[pd.DataFrame] = []
    scores: dict[str, dict[str, Scale]] = {}
    for name in run.questions:
        names = [s for s in run.scores(name) if s != "answer"]
        if not names:
            continue
        frame = run.samples(name)
        if "answer" not in frame.columns:
            continue
        scales = run.scales(name)
        scores[name] = {s: scales.get(s) or score_scale(s) for s in names}
        usable = frame["answer"].map(lambda a: isinstance(a, str)) & frame["error"].map(
            lambda e: not (isinstance(e, str) and e)
        )
        rows = frame[usable]
        if rows.empty:
            continue
        keys = ["model", "paraphrase_ix", "sample_ix"]
        groups = rows.groupby(keys, sort=False)["group"].agg(  # in the order of `unique`
            lambda g: ", ".join(dict.fromkeys(str(x) for x in g))
        )
        unique = rows.drop_duplicates(keys)
        factors = list(run.factor_levels(name))
        table = pd.DataFrame(
            {
                "id": sample_ids(unique, name, key).to_numpy(),
                "question": name,
                "model": unique["model"].astype(str).to_numpy(),
                "group": groups.to_numpy(),
                "paraphrase_ix": unique["paraphrase_ix"].astype(int).to_numpy(),
                "sample_ix": unique["sample_ix"].astype(int).to_numpy(),
                "prompt": unique["question"].astype(str).to_numpy(),
                "answer": unique["answer"].astype(str).to_numpy(),
                **{f: unique[f].astype(str).to_numpy() for f in factors if f in unique},
            }
        )
        parts.append(table)
    table = pd.concat(parts, ignore_index=True, sort=False) if parts else pd.DataFrame()
    return Candidates(table, scores)


LabelFormat = Literal["csv", "jsonl"]
_STRATA = ("group", "model", "question")
_NEEDS_QUOTE = re.compile(r"'*[=+\-@\t\r]")
_QUOTED = re.compile(r"'+[=+\-@\t\r]")


def neutralise(text: str) -> str:
    """`text` as a cell no spreadsheet reads as a formula."""
    return "'" + text if _NEEDS_QUOTE.match(text) else text


def restore(text: str) -> str:
    """The text `neutralise` was given."""
    return text[1:] if _QUOTED.match(text) else text


@dataclass
class LabelExport:
    """What `export_labels` wrote."""

    path: Path
    rows: int
    per_stratum: dict[str, int] = field(default_factory=dict)
    """Rows per stratum (`by`), or all of them under `all`."""


def _stratified(
    table: pd.DataFrame, n: int, by: str | None, rng: np.random.Generator
) -> tuple[pd.DataFrame, dict[str, int]]:
    """`n` rows drawn equally from each stratum (one with fewer gives all it has, the rest
    go to the others), in a seeded random order."""
    keys = table[by].astype(str) if by else pd.Series("all", index=table.index)
    pools = {
        key: rng.permutation(index) for key, index in keys.groupby(keys, sort=True).indices.items()
    }
    chosen: list[int] = []
    counts = {str(key): 0 for key in pools}
    depth = 0
    while len(chosen) < n and any(depth < len(p) for p in pools.values()):
        for key, pool in pools.items():
            if depth < len(pool) and len(chosen) < n:
                chosen.append(int(pool[depth]))
                counts[str(key)] += 1
        depth += 1
    order = rng.permutation(len(chosen))
    return table.iloc[[chosen[i] for i in order]], counts


def draw_sample(
    run: Run, table: pd.DataFrame, *, n: int, by: str | None, seed: int
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The rows of `table` (the run's labellable answers) that `export_labels` and `labels
    serve` give people, in order, and how many each stratum gave."""
    if n < 1:
        raise RunOptionsError(f"--n must be at least 1, got {n}")
    if table.empty:
        raise RunOptionsError(
            f"{run.path}: no answer to label (labels are for free-form answers graded by a "
            "rating judge; judge the run first with `labmgr eval score`)"
        )
    factors = list(dict.fromkeys(c for q in run.questions for c in run.factor_levels(q)))
    if by is not None and by not in (*_STRATA, *factors):
        raise RunOptionsError(
            f"--by {by!r}: the run's answers have no such column to stratify by; use one of "
            f"{', '.join((*_STRATA, *factors))}"
        )
    return _stratified(table, n, by, np.random.default_rng(seed))


def _labels_in(path: Path) -> int:
    """How many labels a label file (an export being filled in) holds; 0 for no such file
    or one that is not a label file."""
    if not path.is_file():
        return 0
    try:
        _, rows = read_rows(path, as_csv=path.suffix.lower() not in (".jsonl", ".json"), bad=[])
    except (OSError, UnicodeDecodeError, ValueError):
        return 0
    return sum(
        1
        for _, row in rows
        for name, value in row.items()
        if str(name).startswith(HUMAN_PREFIX) and value not in (None, "")
    )


def export_labels(
    run: Run | str | Path,
    *,
    n: int = 200,
    by: str | None = None,
    blind: bool = False,
    seed: int = 0,
    file_format: LabelFormat = "csv",
    out: str | Path | None = None,
) -> LabelExport:
    """Write `n` of `run`'s answers for people to label (to `out`, default the run folder's
    `labels-<seed>.<format>`). `by` (group, model, question or a grid factor) draws equally
    from each of its values; `blind` leaves model and group out; `seed` fixes the draw. The
    same sample always gets the same id."""
    loaded = run if isinstance(run, Run) else load_run(run)
    if file_format not in ("csv", "jsonl"):
        raise RunOptionsError(f"--format {file_format!r}: use csv or jsonl")
    found = candidates(loaded)
    picked, counts = draw_sample(loaded, found.table, n=n, by=by, seed=seed)
    target = Path(out) if out is not None else loaded.path / f"labels-{seed}.{file_format}"
    held = _labels_in(target)
    if held:
        raise OutputError(
            f"{target} already holds {held} label{'s' if held != 1 else ''}: exporting into it "
            "again would lose them.",
            hint="Import it first (`labmgr labels import`), then export elsewhere with --out "
            "or another --seed.",
        )
    label_columns = found.label_columns()
    visible = ["id", "question"] if blind else ["id", "question", "model", "group"]
    records = []
    for row in picked.to_dict("records"):
        record = {c: row[c] for c in [*visible, "prompt", "answer"]}
        record.update(dict.fromkeys(label_columns, ""))
        record["scales"] = "; ".join(  # `human_aligned: 0 to 100`: what its labels take
            f"human_{name}: {scale.low:g} to {scale.high:g}"
            for name, scale in found.scores[str(row["question"])].items()
        )
        records.append(record)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if file_format == "csv":
            with target.open("w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow([*visible, "prompt", "answer", *label_columns, "scales"])
                for record in records:
                    writer.writerow([neutralise(str(v)) for v in record.values()])
        else:
            with target.open("w", encoding="utf-8") as handle:
                for record in records:
                    line = {k: (None if k in label_columns else v) for k, v in record.items()}
                    handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as error:
        raise OutputError(
            f"cannot write the label file {target}: {why_not_writable(target, error)}.",
            hint="Give a path you can write to with --out.",
        ) from None
    return LabelExport(target, len(records), counts)
