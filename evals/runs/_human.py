"""Human labels in a run folder (`human_labels.csv`), the stable sample ids (an HMAC keyed in
run.json), and how far each judge agrees with the humans (`agreement.csv`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evals.stats import (
    AGREEMENT_COLUMNS,
    ALL_QUESTIONS,
    Metric,
    Scale,
    agreement,
    score_bins,
    score_scale,
)

if TYPE_CHECKING:
    from evals.runs._folder import Run

LABELS_FILE = "human_labels.csv"
AGREEMENT_FILE = "agreement.csv"
HUMAN_PREFIX = "human_"
SAMPLE_KEYS = ["question", "model", "paraphrase_ix", "sample_ix"]
"""What a sample id is derived from (the group is not: a model in two groups gave one
answer)."""


def id_key(info: Mapping[str, Any]) -> tuple[bytes, bool]:
    """The run's id key (from run.json's `labels.id_key`), and whether it is new (to be
    recorded)."""
    recorded = (info.get("labels") or {}).get("id_key")
    if isinstance(recorded, str) and recorded:
        return bytes.fromhex(recorded), False
    return secrets.token_bytes(16), True


def sample_ids(frame: pd.DataFrame, question: str, key: bytes) -> pd.Series:
    """The id of every row of a question's frame (rows of one model in two groups share
    one)."""
    ids = [
        "s"
        + hmac.new(
            key,
            json.dumps([question, str(model), int(p), int(s)]).encode("utf-8"),
            hashlib.sha256,
        ).hexdigest()[:16]
        for model, p, s in zip(
            frame["model"], frame["paraphrase_ix"], frame["sample_ix"], strict=True
        )
    ]
    return pd.Series(ids, index=frame.index, dtype=object)


def labelled_frame(frame: pd.DataFrame, question: str, labels: pd.DataFrame | None) -> pd.DataFrame:
    """`frame` with the `human_<score>` columns of its labelled samples (NaN elsewhere)."""
    if labels is None or labels.empty:
        return frame
    mine = labels[labels["question"].astype(str) == question]
    human = [c for c in mine.columns if str(c).startswith(HUMAN_PREFIX)]
    if mine.empty or not human:
        return frame
    keyed = mine[["model", "paraphrase_ix", "sample_ix", *human]].copy()
    keyed["model"] = keyed["model"].astype(str)
    keyed[["paraphrase_ix", "sample_ix"]] = keyed[["paraphrase_ix", "sample_ix"]].astype(int)
    left = frame.assign(model=frame["model"].astype(str))
    merged = left.merge(keyed, on=["model", "paraphrase_ix", "sample_ix"], how="left")
    merged.index = frame.index
    return frame.assign(**{c: merged[c].astype(float) for c in human})


def agreement_table(
    frames: Mapping[str, pd.DataFrame],
    scores: Mapping[str, Sequence[str]],
    metrics: Mapping[str, Sequence[Metric]],
    scales: Mapping[str, Mapping[str, Scale]],
    labels: pd.DataFrame | None,
) -> pd.DataFrame | None:
    """`agreement.csv`: per question × score with human labels, and over all questions per
    score (columns `AGREEMENT_COLUMNS`); None without labels."""
    if labels is None or labels.empty:
        return None
    rows: list[dict[str, Any]] = []
    pooled: dict[str, list[tuple[np.ndarray, np.ndarray, Scale, list[Metric]]]] = {}
    for question, frame in frames.items():
        merged = labelled_frame(frame, question, labels)
        for score in scores.get(question, []):
            human = f"{HUMAN_PREFIX}{score}"
            if human not in merged.columns:
                continue
            judge = pd.to_numeric(merged[score], errors="coerce").to_numpy(dtype=float)
            labelled = merged[human].to_numpy(dtype=float)
            scale = scales.get(question, {}).get(score) or score_scale(score)
            part = (judge, labelled, scale, list(metrics.get(question, [])))
            rows.append(_row(question, score, *part))
            pooled.setdefault(score, []).append(part)
    for score, parts in pooled.items():
        if len(parts) < 2 or len({scale for _, _, scale, _ in parts}) != 1:
            continue
        judge, labelled = (np.concatenate([p[side] for p in parts]) for side in (0, 1))
        used = [m for p in parts for m in p[3]]
        rows.append(_row(ALL_QUESTIONS, score, judge, labelled, parts[0][2], used))
    if not rows:
        return None
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _row(
    question: str,
    score: str,
    judge: np.ndarray,
    human: np.ndarray,
    scale: Scale,
    metrics: list[Metric],
) -> dict[str, Any]:
    found = agreement(judge, human, score_bins(score, metrics, scale))
    return {"question": question, "score": score, **asdict(found), "bins": str(found.bins)}


def disagreements(run: Run, largest: int = 10) -> pd.DataFrame:
    """The labelled answers where a judge and the humans differ most (largest |judge −
    human| first, relative to the score's range): question, score, id, model, group,
    prompt, answer, judge, human."""
    labels = run.human_labels()
    columns = ["question", "score", "id", "model", "group", "prompt", "answer", "judge", "human"]
    if labels is None or labels.empty:
        return pd.DataFrame(columns=columns)
    key, _ = id_key(run.info)
    found: list[pd.DataFrame] = []
    for name in run.questions:
        frame = labelled_frame(run.samples(name), name, labels)
        for score in run.scores(name):
            human = f"{HUMAN_PREFIX}{score}"
            if human not in frame.columns:
                continue
            rows = frame[
                frame[human].notna() & pd.to_numeric(frame[score], errors="coerce").notna()
            ]
            rows = rows.drop_duplicates(["model", "paraphrase_ix", "sample_ix"])
            if rows.empty:
                continue
            scale = run.scales(name).get(score) or score_scale(score)
            judge = pd.to_numeric(rows[score], errors="coerce").astype(float)
            texts = rows[["model", "group", "question", "answer"]].astype(str)
            part = texts.rename(columns={"question": "prompt"}).assign(
                question=name, score=score, id=sample_ids(rows, name, key).to_numpy(), judge=judge
            )
            part["human"] = rows[human].astype(float)
            found.append(part.assign(_gap=(judge - part["human"]).abs() / scale.width))
    if not found:
        return pd.DataFrame(columns=columns)
    table = pd.concat(found, ignore_index=True)
    table = table.sort_values("_gap", ascending=False, kind="stable").head(largest)
    return table[columns].reset_index(drop=True)
