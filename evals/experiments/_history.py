"""`run_history`: a score's group means over several runs of the same questions, by run date,
each change from one run to the next tested as `compare_groups` tests two groups."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.errors import RunOptionsError
from evals.runs import Run, load_run
from evals.stats import (
    ALL_QUESTIONS,
    Metric,
    Scale,
    SeedMeans,
    difference_of,
    headline_score,
    holm,
    interval_of,
    score_cells,
    score_scale,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HISTORY_COLUMNS = [
    "run",
    "started",
    "question",
    "group",
    "score",
    "n_models",
    "n_samples",
    "mean",
    "ci_low",
    "ci_high",
    "change",
    "change_low",
    "change_high",
    "p_value",
    "p_adjusted",
    "moved",
    "scale_low",
    "scale_high",
]
"""One row per run × group: the group's mean with its 95% interval, and the change from the
group's previous run with its interval, p-value, Holm-adjusted p-value and `moved`
(adjusted p < 0.05). The first run of a group has no change."""


@dataclass
class History:
    """A score over runs (`table`, columns `HISTORY_COLUMNS`, runs in date order)."""

    table: pd.DataFrame
    score: str
    question: str
    left_out: dict[str, list[str]] = field(default_factory=dict)
    """Run folder name → its questions left out (another run lacks them or the score)."""
    judge_models: dict[str, str] = field(default_factory=dict)
    """Run folder name → its judges' models; empty when every run's are the same."""

    def figure(self) -> Figure:
        """The trend: each group's mean and interval per run, moved changes marked."""
        from evals.plots import history_figure

        return history_figure(self.table, self.score, question=self.question)


def runs_of_questions(runs_dir: str | Path, questions_file: str | Path) -> list[Path]:
    """Every run folder in `runs_dir` made from `questions_file` (by its absolute path, else
    by its file name)."""
    target, folder, found = Path(questions_file).resolve(), Path(runs_dir), []
    for candidate in sorted(folder.iterdir()) if folder.is_dir() else []:
        try:
            info = load_run(candidate).info if (candidate / "run.json").is_file() else {}
        except Exception:
            continue
        recorded = info.get("source_file")
        source = str(info.get("source") or "")
        if recorded == str(target) or (not recorded and Path(source).name == target.name):
            found.append(candidate)
    if not found:
        raise RunOptionsError(
            f"no run in {folder} was made from {questions_file}",
            hint="Run it with `labmgr eval run FILE`, or name the run folders.",
        )
    return found


def _score_of(run: Run, question: str, name: str) -> str | Metric | None:
    if name in run.scores(question):
        return name
    return next((m for m in run.metrics(question) if m.name == name), None)


def _seeds(
    run: Run, questions: Sequence[str], name: str
) -> tuple[dict[str, SeedMeans], Scale | None]:
    """Each group's seed means of `name` over `questions` (each model averaged over them)."""
    scores = {q: [score] for q in questions if (score := _score_of(run, q, name)) is not None}
    frames = {q: run.samples(q) for q in scores}
    _, pools = score_cells(frames, scores, (), {q: run.scales(q) for q in scores})
    seeds = {str(group): pool.seeds() for (_, group, _), pool in pools.items()}
    return seeds, next((pool.scale for pool in pools.values()), None)


def _judge_model(run: Run, questions: Sequence[str]) -> str:
    """The models the judges of `questions` were asked of in `run`, joined ('' if unknown)."""
    models: dict[str, None] = {}
    for question in questions:
        judges = (run.question_info(question).get("definition") or {}).get("judges") or {}
        models.update(dict.fromkeys(str(j["model"]) for j in judges.values() if j.get("model")))
    fallback = (run.info.get("settings") or {}).get("judge_model")
    return ", ".join(models) or str(fallback or "")


def run_history(
    runs: Sequence[Run | str | Path],
    score: str | None = None,
    *,
    question: str = ALL_QUESTIONS,
    out: str | Path | None = None,
) -> History:
    """`score` (default: the runs' headline score) of every group in each run, by date, each
    change from a group's previous run tested. `question` picks one question; by default the
    questions every run has (the others are in `History.left_out`). `out` also draws the
    trend to that file (png, pdf or svg)."""
    loaded = [r if isinstance(r, Run) else load_run(r) for r in runs]
    if len(loaded) < 2:
        raise RunOptionsError(
            f"a history needs at least two runs ({len(loaded)} given)",
            hint="Name two or more run folders, or give --questions FILE for every run of "
            "a question file.",
        )
    loaded.sort(key=lambda r: str(r.info.get("started") or ""))
    if score is None:
        names = [s for r in loaded for s in r.summary["score"].astype(str)]
        score = headline_score(names)
        if score is None:
            raise RunOptionsError("the runs have no score to follow")
    if question == ALL_QUESTIONS:
        shared = [q for q in loaded[0].questions if all(q in r.questions for r in loaded[1:])]
        asked = [q for q in shared if all(_score_of(r, q, score) is not None for r in loaded)]
        if not asked:
            raise RunOptionsError(
                f"no question has the score {score!r} in every run",
                hint="Pick one with --question, or a score the runs share with --score.",
            )
    else:
        missing = [str(r.path) for r in loaded if question not in r.questions]
        if missing:
            raise RunOptionsError(f"question {question!r} is not in {', '.join(missing)}")
        asked = [question]
    rows: list[dict[str, Any]] = []
    previous: dict[str, SeedMeans] = {}
    for run in loaded:
        sides, scale = _seeds(run, asked, score)
        scale = scale or score_scale(score)
        for group, seeds in sides.items():
            interval = interval_of(seeds, scale=scale)
            row: dict[str, Any] = dict.fromkeys(HISTORY_COLUMNS, math.nan)
            row.update(
                run=run.path.name,
                started=run.info.get("started"),
                question=question,
                group=group,
                score=score,
                n_models=seeds.n_models,
                n_samples=seeds.n_samples,
                mean=interval.mean,
                ci_low=interval.low,
                ci_high=interval.high,
                scale_low=scale.low,
                scale_high=scale.high,
            )
            before = previous.get(group)
            if before is not None and before.n_models and seeds.n_models:
                change = difference_of(seeds, before)
                row.update(
                    change=change.difference,
                    change_low=max(change.low, -scale.width),
                    change_high=min(change.high, scale.width),
                    p_value=change.p_value,
                )
            previous[group] = seeds
            rows.append(row)
    table = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
    table["p_adjusted"] = holm(table["p_value"].to_numpy(dtype=float))
    table["moved"] = table["p_adjusted"] < 0.05
    left_out = {
        run.path.name: [q for q in run.questions if q not in asked]
        for run in loaded
        if question == ALL_QUESTIONS and any(q not in asked for q in run.questions)
    }
    judges = {run.path.name: _judge_model(run, asked) for run in loaded}
    if len(set(judges.values())) < 2:
        judges = {}
    history = History(table, score, question, left_out, judges)
    if out is not None:
        _save(history, Path(out))
    return history


def _save(history: History, path: Path) -> None:
    from evals.errors import OutputError, why_not_writable

    file_format = path.suffix.lstrip(".").lower() or "png"
    if file_format not in ("png", "pdf", "svg"):
        raise OutputError(f"cannot write the figure {path}: use a .png, .pdf or .svg name.")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = history.figure()
    FigureCanvasAgg(figure)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format=file_format, bbox_inches="tight", dpi=150)
    except OSError as error:
        raise OutputError(
            f"cannot write the figure {path}: {why_not_writable(path, error)}.",
            hint="Give a path you can write to with --out.",
        ) from None
