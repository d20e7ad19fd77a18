"""One labeller labelling one score of a run: the answers (the sample `labels export` draws,
blind), each digit key's value, the log, and the judge's agreement with the labels so far."""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

import pandas as pd
from filelock import FileLock

from evals.errors import RunOptionsError
from evals.labels._export import candidates, draw_sample
from evals.labels._log import EVENTS, LabelLog, check_labeller
from evals.runs import HUMAN_PREFIX, Run, agreement_table, load_run
from evals.stats import Scale

FIVE_POINTS = 5  # a scale that is not a few whole digits is labelled on five points


def digit_values(scale: Scale) -> dict[str, float]:
    """What each digit key labels on `scale`: the digit itself on a scale of whole numbers
    within 0–9 (a 1–5 rating, a 0/1 class), else keys 1–5 on five evenly spaced points from
    low to high (on 0–100: 0, 25, 50, 75, 100)."""
    low, high = float(scale.low), float(scale.high)
    if low.is_integer() and high.is_integer() and low >= 0 and high <= 9:
        return {str(d): float(d) for d in range(int(low), int(high) + 1)}
    step = scale.width / (FIVE_POINTS - 1)
    return {str(k): scale.low + (k - 1) * step for k in range(1, FIVE_POINTS + 1)}


class LabelSession:
    """What the label server serves: the page's data, each label made, and the agreement so
    far. Thread-safe; `close` releases the log."""

    def __init__(
        self, run: Run, score: str, items: pd.DataFrame, scales: dict[str, Scale], log: LabelLog
    ) -> None:
        self.run, self.score, self.log = run, score, log
        self.items: list[dict[str, Any]] = [  # as the page shows them: no model, group, judge
            {
                **{key: str(row[key]) for key in ("id", "question", "prompt", "answer")},
                "low": scales[str(row["question"])].low,
                "high": scales[str(row["question"])].high,
                "keys": digit_values(scales[str(row["question"])]),
            }
            for row in items.to_dict("records")
        ]
        self._facts = items.set_index("id")[["question", "model", "paraphrase_ix", "sample_ix"]]
        self._by_id = {item["id"]: item for item in self.items}
        self._state = log.state(score)
        self._lock = threading.Lock()
        self._agreement: tuple[int, list[dict[str, Any]]] | None = None
        self.saved_now = 0

    @property
    def labelled(self) -> int:
        return sum(item["id"] in self._state.labels for item in self.items)

    def page(self) -> dict[str, Any]:
        """The answers in order with their keys, the labels and skips so far, and where to
        open (the first answer neither labelled nor skipped)."""
        ids = [item["id"] for item in self.items]
        with self._lock:
            labels = {i: self._state.labels[i] for i in ids if i in self._state.labels}
            skipped = [i for i in ids if i in self._state.skipped]
        passed = {*labels, *skipped}
        start = next(
            (n for n, i in enumerate(ids) if i not in passed),
            next((n for n, i in enumerate(ids) if i not in labels), 0),
        )
        return {
            "run": self.run.path.name,
            "labeller": self.log.labeller,
            "score": self.score,
            "items": self.items,
            "labels": labels,
            "skipped": skipped,
            "start": start,
        }

    def record(self, payload: Any) -> dict[str, Any]:
        """Check and save one event from the page (`{"id", "event", "value"}`); the counts."""
        if not isinstance(payload, dict):
            raise RunOptionsError('a label is a JSON object {"id": …, "event": …, "value": …}')
        sample, event, value = payload.get("id"), payload.get("event"), payload.get("value")
        item = self._by_id.get(str(sample))
        if item is None:
            raise RunOptionsError(f"id {sample!r} is not an answer of this labelling session")
        if event not in EVENTS:
            raise RunOptionsError(f"event {event!r}: use one of {', '.join(EVENTS)}")
        number: float | None = None
        sample = item["id"]
        if event == "label":
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise RunOptionsError(f"id {sample}: the label {value!r} is not a number")
            number = float(value)
            if not (math.isfinite(number) and item["low"] <= number <= item["high"]):
                raise RunOptionsError(
                    f"id {sample}: the label {value!r} is outside {item['low']:g} to "
                    f"{item['high']:g}"
                )
        with self._lock:
            self.log.append(sample, self.score, event, number)
            self._state.apply(sample, event, number)
            self.saved_now += 1
            return {"labelled": self.labelled, "skipped": len(self._state.skipped)}

    def agreement(self) -> list[dict[str, Any]]:
        """`agreement.csv`'s rows for the judge against this labeller so far; NaN as None."""
        with self._lock:
            version, labels = self.saved_now, dict(self._state.labels)
            if self._agreement is not None and self._agreement[0] == version:
                return self._agreement[1]
        rows = [
            {"id": sample, **self._facts.loc[sample].to_dict(), HUMAN_PREFIX + self.score: value}
            for sample, value in labels.items()
            if sample in self._facts.index
        ]
        table = None
        if rows:
            questions = list(dict.fromkeys(str(row["question"]) for row in rows))
            table = agreement_table(
                {q: self.run.samples(q) for q in questions},
                {q: [self.score] for q in questions},
                {q: self.run.metrics(q) for q in questions},
                {q: self.run.scales(q) for q in questions},
                pd.DataFrame(rows),
            )
        records = [] if table is None else table.to_dict("records")
        found = [{str(k): _plain(v) for k, v in row.items()} for row in records]
        with self._lock:
            self._agreement = (version, found)
        return found

    def close(self) -> None:
        self.log.close()


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def open_session(
    run: Run | str | Path,
    *,
    labeller: str,
    score: str | None = None,
    n: int = 200,
    by: str | None = None,
    seed: int = 0,
) -> LabelSession:
    """A session of `labeller` on `score` (default: the run's first judge score) over the
    answers `export_labels(run, n=n, by=by, seed=seed)` draws that have that score."""
    check_labeller(labeller)
    path = run.path if isinstance(run, Run) else Path(run)
    log = LabelLog(load_run(path).path, labeller)
    try:
        # The id key is written to run.json on first use: one server at a time makes it.
        with FileLock(str(log.path.parent / ".id-key.lock"), timeout=60):
            loaded = load_run(path)
            found = candidates(loaded)
        known = list(dict.fromkeys(s for scores in found.scores.values() for s in scores))
        if not known:
            raise RunOptionsError(
                f"{loaded.path}: no judge score to label",
                hint="Judge the run first with `labmgr eval score`.",
            )
        chosen = score if score is not None else known[0]
        if chosen not in known:
            raise RunOptionsError(
                f"--score {chosen!r} is not a score of the run (its scores: {', '.join(known)})"
            )
        having = [q for q, scores in found.scores.items() if chosen in scores]
        table = found.table
        if not table.empty:
            table = table[table["question"].isin(having)]
        picked, _ = draw_sample(loaded, table, n=n, by=by, seed=seed)
        scales = {q: found.scores[q][chosen] for q in having}
        return LabelSession(loaded, chosen, picked, scales, log)
    except BaseException:
        log.close()
        raise
