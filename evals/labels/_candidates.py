"""The samples of a run a person can label: free-form answers (text, no error) of questions
with a score, each sample once (a model in two groups gave one answer), with its stable id."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from evals.runs import HUMAN_PREFIX, Run, id_key, sample_ids, write_run_file
from evals.stats import Scale, score_scale


@dataclass(frozen=True)
class Candidates:
    """The labellable samples (`table`) and each question's scores with their scales."""

    table: pd.DataFrame
    """id, question, model, group (the groups it is in, joined), paraphrase_ix, sample_ix,
    prompt, answer, and each grid factor of its question."""
    scores: dict[str, dict[str, Scale]]
    """question → score → scale: what a label of the question's samples may give."""

    def label_columns(self) -> list[str]:
        names = dict.fromkeys(s for scores in self.scores.values() for s in scores)
        return [f"{HUMAN_PREFIX}{name}" for name in names]


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
        groups = rows.groupby(["model", "paraphrase_ix", "sample_ix"], sort=False)["group"].agg(
            lambda g: ", ".join(dict.fromkeys(str(x) for x in g))
        )
        unique = rows.drop_duplicates(["model", "paraphrase_ix", "sample_ix"])
        factors = list(run.factor_levels(name))
        table = pd.DataFrame(
            {
                "id": sample_ids(unique, name, key).to_numpy(),
                "question": name,
                "model": unique["model"].astype(str).to_numpy(),
                "group": [
                    groups[(m, p, s)]
                    for m, p, s in zip(
                        unique["model"], unique["paraphrase_ix"], unique["sample_ix"], strict=True
                    )
                ],
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
