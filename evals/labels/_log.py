"""A labeller's label log, `RUN/labels/<labeller>.jsonl`: one fsync'd JSON line per event
(`label`, `clear` or `skip` of one answer on one score); the last event of an answer wins."""

from __future__ import annotations

import json
import math
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout

from evals.errors import LabelsFileError, OutputError, RunOptionsError, describe_os_error
from evals.runs import HUMAN_PREFIX

LABELS_DIR = "labels"
EVENTS = ("label", "clear", "skip")
Event = Literal["label", "clear", "skip"]
_LABELLER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_labeller(name: str) -> str:
    if not _LABELLER.fullmatch(name):
        raise RunOptionsError(
            f"--labeller {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', starting with "
            "a letter or digit (it names the file RUN/labels/<labeller>.jsonl)"
        )
    return name


@dataclass
class LabelState:
    """Where a labeller stands on one score: the last label of each answer, and the answers
    skipped and not labelled since."""

    labels: dict[str, float] = field(default_factory=dict)
    skipped: set[str] = field(default_factory=set)

    def apply(self, sample: str, event: str, value: float | None) -> None:
        if event == "label" and value is not None:
            self.labels[sample] = value
            self.skipped.discard(sample)
        elif event == "clear":
            self.labels.pop(sample, None)
            self.skipped.discard(sample)
        elif event == "skip" and sample not in self.labels:
            self.skipped.add(sample)


class LabelLog:
    """One labeller's log, locked against a second server of the same labeller until `close`."""

    def __init__(self, run_path: Path, labeller: str) -> None:
        self.labeller = check_labeller(labeller)
        self.path = run_path / LABELS_DIR / f"{labeller}.jsonl"
        self._write = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = FileLock(str(self.path) + ".lock", timeout=0)
            self._lock.acquire()
        except Timeout:
            raise RunOptionsError(
                f"{self.path}: another `labmgr labels serve` of labeller {labeller!r} has it open",
                hint="Stop that server first, or label under another --labeller name.",
            ) from None
        except OSError as error:
            raise OutputError(
                f"cannot write the labels folder {self.path.parent}: {describe_os_error(error)}.",
                hint="Check the run folder's permissions.",
            ) from None
        self.events = self._read()

    def _read(self) -> list[dict[str, Any]]:
        """Every event so far; an unfinished last line (a write cut short) is removed, a whole
        one missing its newline (a log saved by an editor) is ended."""
        try:
            data = self.path.read_bytes() if self.path.exists() else b""
            if data and not data.endswith(b"\n"):
                end = data.rfind(b"\n") + 1
                if _event(data[end:]) is not None:
                    data += b"\n"
                    with self.path.open("ab") as handle:
                        handle.write(b"\n")
                else:
                    data = data[:end]
                    with self.path.open("r+b") as handle:
                        handle.truncate(len(data))
        except OSError as error:
            raise OutputError(
                f"cannot read the label log {self.path}: {describe_os_error(error)}."
            ) from None
        events = []
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if not line.strip():
                continue
            event = _event(line)
            if event is None:
                raise LabelsFileError(
                    f"{self.path}:{number}: not a label event (a JSON object with an 'event' "
                    f"of {', '.join(EVENTS)})",
                    hint="Fix or delete that line, then start the server again.",
                )
            events.append(event)
        return events

    def state(self, score: str) -> LabelState:
        found = LabelState()
        for event in self.events:
            if event.get("score") == score:
                found.apply(str(event.get("id")), str(event["event"]), _number(event, score))
        return found

    def append(self, sample: str, score: str, event: Event, value: float | None) -> None:
        record: dict[str, Any] = {"id": sample, "score": score, "event": event}
        if event != "skip":
            record[f"{HUMAN_PREFIX}{score}"] = value if event == "label" else None
        record["labeller"] = self.labeller
        record["at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._write:
            try:
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(line)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as error:
                raise OutputError(
                    f"cannot write the label log {self.path}: {describe_os_error(error)}."
                ) from None
            self.events.append(record)

    def close(self) -> None:
        self._lock.release()


def _event(line: bytes | str) -> dict[str, Any] | None:
    """A line's label event, or None when it is not one."""
    try:
        event = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return event if isinstance(event, dict) and event.get("event") in EVENTS else None


def _number(event: dict[str, Any], score: str) -> float | None:
    value = event.get(f"{HUMAN_PREFIX}{score}")
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def latest_labels(
    rows: Iterable[tuple[int, dict[str, Any]]],
) -> list[tuple[int, dict[str, Any]]]:
    """A label log's rows as a file of labels: one row per answer with the last label of each
    score (a cleared one empty), numbered by the answer's last event."""
    merged: dict[str, tuple[int, dict[str, Any]]] = {}
    for line, event in rows:
        sample = str(event.get("id") or "")
        _, row = merged.get(sample, (line, {"id": event.get("id")}))
        if event.get("event") in ("label", "clear"):
            row.update({k: v for k, v in event.items() if str(k).startswith(HUMAN_PREFIX)})
        merged[sample] = (line, row)
    return sorted(merged.values(), key=lambda item: item[0])
