"""A run folder on disk (`run.json`, `samples/<question>.parquet`, the statistics' CSV files,
`run.log`, `report.html`) and `load_run` to read it back."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from evals.errors import RunFolderError
from evals.runs._human import AGREEMENT_FILE, LABELS_FILE
from evals.runs._samples_file import read_samples
from evals.stats import (
    DEFAULT_METHOD,
    SHARE,
    SUMMARY_COLUMNS,
    Metric,
    MetricError,
    Scale,
    default_metrics,
)

RUN_FILE = "run.json"
SUMMARY_FILE = "summary.csv"
COMPARISONS_FILE = "comparisons.csv"
COSTS_FILE = "costs.csv"
MODEL_SUMMARY_FILE = "summary_by_model.csv"
RUN_LOG = "run.log"
REPORT_FILE = "report.html"
SAMPLES_DIR = "samples"
CURVES_FILE = "training_curves.csv"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def samples_file_name(question: str, taken: set[str]) -> str:
    """A file name for a question's samples, safe on every file system and unique."""
    stem = _UNSAFE.sub("_", question).strip("._")[:80] or "question"
    name, counter = f"{stem}.parquet", 2
    while name.lower() in taken:
        name, counter = f"{stem}_{counter}.parquet", counter + 1
    taken.add(name.lower())
    return f"{SAMPLES_DIR}/{name}"


@dataclass
class Run:
    """A run read from its folder. Frames are read on first use."""

    path: Path
    info: dict[str, Any]
    """The contents of run.json."""
    summary: pd.DataFrame
    comparisons: pd.DataFrame | None = None
    """Each group against the baseline (`comparisons.csv`), when the run has a baseline."""
    _frames: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def questions(self) -> list[str]:
        return [q["name"] for q in self.info.get("questions", [])]

    @property
    def groups(self) -> dict[str, list[str]]:
        return {name: list(models) for name, models in self.info.get("groups", {}).items()}

    def question_info(self, name: str) -> dict[str, Any]:
        for entry in self.info.get("questions", []):
            if entry["name"] == name:
                return dict(entry)
        raise KeyError(f"{self.path}: no question named {name!r} in this run")

    def scores(self, name: str) -> list[str]:
        """The question's score columns (its derived metrics are in `metrics`)."""
        return list(self.question_info(name).get("scores", []))

    def metrics(self, name: str) -> list[Metric]:
        """The question's derived metrics as recorded (else the defaults of its scores)."""
        specs = self.question_info(name).get("metrics")
        if specs is None:
            return default_metrics(self.scores(name))
        try:
            return [Metric.from_spec(str(n), spec) for n, spec in dict(specs).items()]
        except (MetricError, TypeError, ValueError) as error:
            raise RunFolderError(
                f"{self.path / RUN_FILE}: question {name!r} records a metric that cannot be "
                f"read ({error})"
            ) from None

    def scales(self, name: str) -> dict[str, Scale]:
        """The range of each of the question's recorded scores, and 0–1 for each metric."""
        recorded = self.question_info(name).get("scales") or {}
        scales: dict[str, Scale] = {}
        for score, bounds in dict(recorded).items():
            try:
                low, high = float(bounds[0]), float(bounds[1])
                share = list(bounds)[2:] == ["share"]  # a 0/1 score such as `correct`
                scales[str(score)] = Scale(low, high, "share" if share else "score")
            except (TypeError, ValueError, IndexError):
                continue
        scales.update({metric.name: SHARE for metric in self.metrics(name)})
        return scales

    @property
    def statistics(self) -> dict[str, Any]:
        """How the summary and comparisons were made: method, resamples, seed, baseline."""
        return dict(self.info.get("settings", {}).get("statistics", {}))

    @property
    def method(self) -> str:
        """The interval method of the summary (the default when run.json records none)."""
        return str(self.statistics.get("method") or DEFAULT_METHOD)

    @property
    def by(self) -> list[str]:
        """The grid factors the summary and comparisons are split by (none: not split)."""
        return [str(name) for name in self.statistics.get("by") or []]

    def factor_levels(self, name: str) -> dict[str, list[str]]:
        """A question's grid factors with their levels in the order written."""
        recorded = self.question_info(name).get("factors") or {}
        return {str(f): [str(level) for level in levels] for f, levels in dict(recorded).items()}

    @property
    def baseline(self) -> str | dict[str, str] | None:
        """The group every other group is compared against, or each compared group's own
        (`{group: baseline}`), if any."""
        value = self.statistics.get("baseline")
        if isinstance(value, dict):
            return {str(group): str(base) for group, base in value.items()}
        return str(value) if value is not None else None

    def samples(self, name: str) -> pd.DataFrame:
        """The frame of one question, exactly as `q.df(groups)` returned it."""
        if name not in self._frames:
            self._frames[name] = self._read(name)
        return self._frames[name]

    def _read(self, name: str, columns: list[str] | None = None) -> pd.DataFrame:
        file = self.path / self.question_info(name)["samples_file"]
        if not file.is_file():
            raise RunFolderError(f"{file}: missing samples file of question {name!r}")
        try:
            return read_samples(file, columns=columns)
        except (OSError, ValueError, KeyError, pa.ArrowException) as error:
            raise RunFolderError(
                f"{file}: the samples of question {name!r} cannot be read ({error})",
                hint="The file is damaged: run the questions again (the cache makes it "
                "free) to write a new run folder.",
            ) from None

    def keep_frames(self, frames: dict[str, pd.DataFrame]) -> None:
        """Hold frames already in memory as this run's samples (written from these frames)."""
        self._frames.update(frames)

    def errors(self) -> pd.DataFrame:
        """Every row with an error over all questions (`question`, `model`, `error`)."""
        parts = []
        for name in self.questions:
            frame = self._frames.get(name)
            if frame is None:
                frame = self._read(name, columns=["model", "error"])
            failed = frame.loc[frame["error"].notna(), ["model", "error"]]
            parts.append(failed.assign(question=name)[["question", "model", "error"]])
        if not parts:
            return pd.DataFrame(columns=["question", "model", "error"])
        return pd.concat(parts, ignore_index=True)

    def human_labels(self) -> pd.DataFrame | None:
        """The human labels imported into the run (`human_labels.csv`), if any."""
        return _read_table(self.path / LABELS_FILE, {"id", "question", "model"})

    def agreement(self) -> pd.DataFrame | None:
        """How far each judge agrees with the human labels (`agreement.csv`), if labelled."""
        return _read_table(self.path / AGREEMENT_FILE, {"question", "score", "bins"})

    def costs(self) -> pd.DataFrame | None:
        """Cost per sample beside each score, per group and model (`costs.csv`)."""
        return _read_table(self.path / COSTS_FILE, {"group", "model", "level", "score"})

    def model_summary(self) -> pd.DataFrame | None:
        """Per-model intervals (`summary_by_model.csv`), when the run wrote them."""
        return _read_table(self.path / MODEL_SUMMARY_FILE)

    def training_curves(self) -> pd.DataFrame | None:
        """The training curves of the run's models (`training_curves.csv`), when written."""
        return _read_table(self.path / CURVES_FILE)

    def frames(self) -> dict[str, pd.DataFrame]:
        return {name: self.samples(name) for name in self.questions}


def load_run(path: str | Path) -> Run:
    """Read a run folder written by `run_questions`."""
    folder = Path(path)
    run_file = folder / RUN_FILE
    if folder.is_file():
        raise RunFolderError(f"{folder}: a file, not a run folder")
    if not folder.is_dir():
        raise RunFolderError(f"{folder}: no such run folder")
    if not run_file.is_file():
        raise RunFolderError(f"{folder}: not a run folder (no {RUN_FILE})")
    try:
        info = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RunFolderError(f"{run_file}: cannot read: {error}") from None
    if not isinstance(info, dict) or not isinstance(info.get("questions"), list):
        raise RunFolderError(f"{run_file}: missing the 'questions' list")
    statistics = (info.get("settings") or {}).get("statistics") or {}
    text = {"question", "group", "baseline", *(str(f) for f in statistics.get("by") or [])}
    summary = _read_table(folder / SUMMARY_FILE, text)
    if summary is None:
        summary = pd.DataFrame(columns=SUMMARY_COLUMNS)
    return Run(folder, info, summary, _read_table(folder / COMPARISONS_FILE, text))


def _read_table(path: Path, text: set[str] | None = None) -> pd.DataFrame | None:
    """A CSV of the run folder (None when absent); the `text` columns stay text (a level
    `500` or a group `1` is a name, not a number)."""
    if not path.is_file():
        return None
    try:
        return pd.read_csv(
            path,
            keep_default_na=False,
            na_values=[""],
            dtype=dict.fromkeys(text or (), str),
        )
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise RunFolderError(f"{path}: cannot read: {error}") from None
