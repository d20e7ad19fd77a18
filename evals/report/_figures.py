"""The figures of a run, drawn with `evals.plots` and the run's groups in order (so a group
has one colour in all of them): embedded in the report as PNG, or written as files. Each has
a stable name (`comparisons-all-questions`, `question-03-quick_buck-means`, …), its file name.

Figures are drawn in worker processes, one per core. A report keeps each PNG beside it with a
digest of what it is drawn from (`FigureStore`), and a lab keeps them in one shared folder by
digest: a figure whose input did not change is read back instead of drawn.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import multiprocessing
import os
import re
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evals.errors import OutputError, why_not_writable
from evals.plots import (
    answers_figure,
    checkpoints_figure,
    comparison_figure,
    cost_figure,
    folded_levels,
    means_figure,
    metric_figure,
    plot_frame,
)
from evals.runs import Run
from evals.stats import ALL_QUESTIONS, SHARE, describe_method, headline_score

__all__ = [
    "COST_FIGURE",
    "CURVES_FIGURE",
    "FIGURE_FORMATS",
    "EmbeddedFigure",
    "FigureFormat",
    "FigurePlan",
    "FigureProblem",
    "FigureSet",
    "FigureStore",
    "draw_figures",
    "prepare_figure_folder",
    "question_figure_prefix",
    "run_plans",
    "write_figures",
]

_DPI = 96
_FILE_DPI = 200
_MAX_DISTINCT_ANSWERS = 40
"""Free-form answers are drawn as shares only when they repeat (short answers)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
CURVES_FIGURE = "training-curves"
COST_FIGURE = "score-against-cost"
FigureFormat = Literal["pdf", "svg", "png"]
FIGURE_FORMATS: tuple[str, ...] = ("pdf", "svg", "png")
_DRAWING_VERSION = 4
"""Part of every figure's digest: bumped when the figures' drawing code changes."""
_IN_PROCESS_BELOW = 4
"""Fewer figures than this are drawn in this process (a pool costs a start-up)."""
SHARED_FIGURES_LIMIT = 256 * 1024 * 1024
"""The most a lab's shared figure folder keeps (bytes); the least recently used go first."""


@dataclass(frozen=True)
class FigurePlan:
    """A figure of the run, not drawn yet (`name`: stable and file-safe)."""

    name: str
    caption: str
    draw: Callable[[], Figure]


@dataclass(frozen=True)
class EmbeddedFigure:
    name: str
    caption: str
    data_uri: str


@dataclass(frozen=True)
class FigureProblem:
    name: str
    message: str


@dataclass
class FigureSet:
    """The figures drawn (embedded, written) and the ones that could not be."""

    embedded: list[EmbeddedFigure]
    files: list[Path]
    problems: list[FigureProblem]
    reused: int = 0
    """Embedded figures read back from a store instead of drawn."""


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, pil_kwargs={"compress_level": 3})
    return buffer.getvalue()


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _interval_words(run: Run) -> str:
    return describe_method(str(run.statistics.get("method", "hierarchical")))


def _slug(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_")[:60] or "question"


def headline_plans(run: Run) -> list[FigurePlan]:
    """The figures the report opens with: the comparisons against the baseline (pooled, then
    per question), each metric per question (the EM paper's figure), and every question's
    means. A run split by grid factors draws each level like a question."""
    plans: list[FigurePlan] = []
    groups = list(run.groups)
    comparisons = run.comparisons
    if comparisons is not None and not comparisons.empty:
        comparisons = folded_levels(comparisons, run.by)
        baseline = str(comparisons["baseline"].iloc[0])
        holm = f"filled markers: Holm-adjusted p < 0.05 over the run's {len(comparisons)} tests"
        is_pooled = comparisons["question"] == ALL_QUESTIONS
        pooled = "over all questions (each model averaged over them, then the models compared)"
        for name, rows, where in (
            ("all-questions", comparisons[is_pooled], pooled),
            ("per-question", comparisons[~is_pooled], "per question"),
        ):
            if not rows.empty:
                caption = f"Each group minus {baseline}, {where}, with its 95% interval; {holm}."
                title = f"Against {baseline}, {name.replace('-', ' ')}"
                draw = partial(comparison_figure, rows, groups=groups, title=title)
                plans.append(FigurePlan(f"comparisons-{name}", caption, draw))
    summary = folded_levels(run.summary, run.by)
    if summary.empty:
        return plans
    words = _interval_words(run)
    shares = summary[(summary["scale_low"] == SHARE.low) & (summary["scale_high"] == SHARE.high)]
    for metric in dict.fromkeys(shares["score"].astype(str)):
        plans.append(
            FigurePlan(
                f"{_slug(metric)}-per-question",
                f"The share '{metric}' per question and group with its 95% interval ({words}); "
                "the pooled row last.",
                partial(metric_figure, summary, metric, groups=groups),
            )
        )
    if summary["question"].nunique() >= 2:
        plans.append(
            FigurePlan(
                "means-per-question",
                f"Each group's mean with its 95% interval ({words}), per question and score, "
                "each score on its own scale.",
                partial(means_figure, summary, groups=groups, title="Mean score per group"),
            )
        )
    return plans


def cost_plans(run: Run) -> list[FigurePlan]:
    costs = run.costs()
    if costs is None or costs.empty or costs["score"].isna().all():
        return []
    score = headline_score(costs["score"].dropna())
    if score is None:
        return []
    caption = (
        f"{score} (its 95% interval over the group's seeds) against the answers' cost per "
        "1,000 samples, per group (filled) and model (hollow); judge costs are not included."
    )
    draw = partial(cost_figure, costs, score, groups=list(run.groups))
    return [FigurePlan(COST_FIGURE, caption, draw)]


def curves_plans(run: Run) -> list[FigurePlan]:
    curves = run.training_curves()
    if curves is None or curves.empty:
        return []
    jobs = curves.groupby("group")["job_id"].nunique()
    counts = ", ".join(f"{group} ({count})" for group, count in jobs.items())

    def draw() -> Figure:
        from labmgr.finetuning import group_curves_figure

        return group_curves_figure(curves, "Training curves of the run's models")

    caption = (
        "Training curves per step from each job's results file, one colour per group and one "
        f"line per job: {counts}."
    )
    return [FigurePlan(CURVES_FIGURE, caption, draw)]


def question_figure_prefix(run: Run, name: str) -> str:
    """The start of the names of one question's figures: `question-03-quick_buck-`."""
    return f"question-{run.questions.index(name) + 1:02d}-{_slug(name)}-"


def question_plans(run: Run, name: str) -> list[FigurePlan]:
    """One question's figures: its means, its scores' distributions, two scores against each
    other, a score against training step, next-token or answer shares."""
    prefix = question_figure_prefix(run, name)
    frame = run.samples(name)
    scores = run.scores(name)
    scales = {s: scale for s, scale in run.scales(name).items() if s in scores}
    order = list(run.groups)
    kind = run.question_info(name).get("type")
    summary = folded_levels(run.summary[run.summary["question"].astype(str) == name], run.by)
    drawn: dict[str, Any] = {"name": name, "order": order}
    plans: list[FigurePlan] = []

    def add(suffix: str, caption: str, draw: Callable[[], Figure]) -> None:
        plans.append(FigurePlan(prefix + suffix, caption, draw))

    if not summary.empty:
        caption = f"Each group's mean with its 95% interval: {_interval_words(run)}."
        add("means", caption, partial(means_figure, summary, groups=order, title=name))
    if scores:
        add(
            "scores",
            "Distribution of scores per group (quartiles dashed; mean marked).",
            partial(plot_frame, frame, "scores", scores=scores, scale=scales, **drawn),
        )
        if len(scores) >= 2:
            add(
                "scatter",
                f"{scores[0]} against {scores[1]}, one point per sample.",
                partial(plot_frame, frame, "scatter", scores=scores, scale=scales, **drawn),
            )
        facts = {m: f for m, f in run.info.get("models", {}).items() if isinstance(f, dict)}
        steps = {m: f.get("step") for m, f in facts.items()}
        if len({steps.get(str(m)) for m in frame["model"].unique()} - {None}) >= 2:
            add(
                "checkpoints",
                f"{scores[0]} against training step, one line per fine-tuning job.",
                partial(
                    checkpoints_figure,
                    frame,
                    scores[0],
                    steps,
                    jobs={m: f.get("job") for m, f in facts.items()},
                    order=order,
                    title=name,
                    scale=scales,
                ),
            )
    if kind == "next_token":
        add(
            "next-token",
            "Mean probability of the first token per group (rare tokens in [OTHER]).",
            partial(plot_frame, frame, "next_token", min_fraction=0.02, **drawn),
        )
    elif kind == "free_form" and 0 < frame["answer"].nunique() <= _MAX_DISTINCT_ANSWERS:
        add(
            "answers",
            "Share of each answer per group (rare answers in [OTHER]).",
            partial(answers_figure, frame, order=order, title=name, min_fraction=0.02),
        )
    return plans


def run_plans(run: Run) -> list[FigurePlan]:
    """Every figure of the run: the headline's, cost, training curves, then each question's."""
    return [
        *headline_plans(run),
        *cost_plans(run),
        *curves_plans(run),
        *(plan for name in run.questions for plan in question_plans(run, name)),
    ]


@dataclass(frozen=True)
class FigureStore:
    """A folder where a report keeps its figures as PNG, each beside the digest of its input
    (`digests`, by name), and optionally a lab's `shared` folder where each PNG is named by
    its digest alone (so a figure of another run with the same input is found there)."""

    folder: Path
    digests: Mapping[str, str]
    shared: Path | None = None

    @classmethod
    def of(
        cls, run: Run, plans: list[FigurePlan], folder: Path, shared: Path | None = None
    ) -> FigureStore:
        return cls(folder, figure_digests(run, plans), shared)

    def _png_file(self, name: str) -> Path:
        return self.folder / f"{name}.png"

    def _shared_file(self, name: str) -> Path | None:
        digest = self.digests.get(name)
        return None if self.shared is None or digest is None else self.shared / f"{digest}.png"

    def read(self, name: str) -> bytes | None:
        """The kept PNG of a figure whose digest is unchanged (from the report's folder, else
        the shared one), else None."""
        png_file = self._png_file(name)
        try:
            if png_file.with_suffix(".digest").read_text() == self.digests[name]:
                return png_file.read_bytes()
        except (OSError, KeyError):
            pass
        shared = self._shared_file(name)
        if shared is None:
            return None
        try:
            png = shared.read_bytes()
            os.utime(shared)  # recently used: pruned last
        except OSError:
            return None
        self._keep_here(name, png)
        return png

    def keep(self, name: str, png: bytes) -> None:
        """Keep a drawn PNG, here and in the shared folder (best effort)."""
        self._keep_here(name, png)
        shared = self._shared_file(name)
        if shared is None:
            return
        temporary = shared.with_name(f"{shared.stem}.{os.getpid()}.part")
        try:
            shared.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(png)
            temporary.replace(shared)  # whole or absent, whoever else writes the same figure
        except OSError:
            with suppress(OSError):
                temporary.unlink(missing_ok=True)

    def _keep_here(self, name: str, png: bytes) -> None:
        png_file = self._png_file(name)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            png_file.write_bytes(png)
            png_file.with_suffix(".digest").write_text(self.digests[name])
        except (OSError, KeyError):
            pass

    def prune_shared(self, limit: int = SHARED_FIGURES_LIMIT) -> None:
        """Keep the shared folder within `limit` bytes, dropping the least recently used."""
        if self.shared is None:
            return
        try:
            files = [(f.stat(), f) for f in self.shared.glob("*.png")]
        except OSError:
            return
        total = sum(stat.st_size for stat, _ in files)
        for stat, path in sorted(files, key=lambda item: item[0].st_mtime):
            if total <= limit:
                break
            with suppress(OSError):
                path.unlink()
                total -= stat.st_size


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def _frame_digest(frame: pd.DataFrame | None) -> str:
    if frame is None:
        return ""
    return hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()


def figure_digests(run: Run, plans: list[FigurePlan]) -> dict[str, str]:
    """What each figure is drawn from, hashed: a question's samples file and summary rows,
    the curves, costs.csv, or the summary and comparisons; and the groups, statistics, models
    and caption."""
    common = {
        "version": _DRAWING_VERSION,
        "groups": run.groups,
        "models": run.info.get("models", {}),
        "statistics": run.statistics,
    }
    summary = run.summary
    prefixes = {question_figure_prefix(run, name): name for name in run.questions}
    headline: str | None = None
    per_question: dict[str, str] = {}
    digests: dict[str, str] = {}
    for plan in plans:
        question = next((q for p, q in prefixes.items() if plan.name.startswith(p)), None)
        if question is not None:
            source = per_question.get(question)
            if source is None:
                entry = run.question_info(question)
                rows = summary[summary["question"].astype(str) == question]
                source = per_question[question] = json.dumps(
                    [
                        _file_digest(run.path / entry["samples_file"]),
                        _frame_digest(rows),
                        {k: entry.get(k) for k in ("type", "scores", "judges", "scales")},
                    ],
                    default=str,
                )
        elif plan.name == CURVES_FIGURE:
            source = _frame_digest(run.training_curves())
        elif plan.name == COST_FIGURE:
            source = _frame_digest(run.costs())
        else:
            if headline is None:
                headline = _frame_digest(summary) + _frame_digest(run.comparisons)
            source = headline
        facts = {**common, "name": plan.name, "caption": plan.caption, "source": source}
        digests[plan.name] = hashlib.sha256(
            json.dumps(facts, sort_keys=True, default=str).encode()
        ).hexdigest()
    return digests


_PLANS: list[FigurePlan] = []
"""The plans the worker processes draw (inherited when they are forked)."""


@dataclass(frozen=True)
class _Drawn:
    png: bytes | None = None
    file: Path | None = None
    problem: FigureProblem | None = None
    failure: tuple[str, str | None] | None = None
    """An `OutputError` writing the file (message, hint), raised by the caller."""


def _draw_one(index: int, embed: bool, folder: Path | None, file_format: str) -> _Drawn:
    plan = _PLANS[index]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figure = plan.draw()
            png = _png(figure) if embed else None
    except (ValueError, TypeError, KeyError) as error:
        return _Drawn(
            problem=FigureProblem(plan.name, f"{plan.caption.split(',')[0]}: not drawn ({error})")
        )
    path = None
    if folder is not None:
        try:
            path = _save(figure, folder / f"{plan.name}.{file_format}", file_format)
        except OutputError as error:
            return _Drawn(failure=(error.message, error.hint))
    return _Drawn(png, path)


def _draw_many(
    plans: list[FigurePlan],
    todo: list[int],
    embed: bool,
    folder: Path | None,
    file_format: str,
    processes: int | None,
) -> dict[int, _Drawn]:
    global _PLANS
    workers = min(processes or os.cpu_count() or 1, len(todo))
    _PLANS = plans
    try:
        methods = multiprocessing.get_all_start_methods()
        # The plans are closures over the run's frames: forked workers inherit them.
        if workers < 2 or len(todo) < _IN_PROCESS_BELOW or "fork" not in methods:
            return {i: _draw_one(i, embed, folder, file_format) for i in todo}
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {i: pool.submit(_draw_one, i, embed, folder, file_format) for i in todo}
            return {i: future.result() for i, future in futures.items()}
    finally:
        _PLANS = []


def draw_figures(
    plans: list[FigurePlan],
    *,
    embed: bool = True,
    folder: Path | None = None,
    file_format: FigureFormat = "pdf",
    store: FigureStore | None = None,
    processes: int | None = None,
) -> FigureSet:
    """Draw each plan once, in up to `processes` workers: embedded as PNG and/or written to
    `folder` as `<name>.<file_format>`. With a `store`, an embedded figure whose input is
    unchanged is read back instead of drawn. A figure that cannot be drawn is a problem,
    not an error."""
    kept: dict[int, bytes] = {}
    if store is not None and embed and folder is None:
        for i, plan in enumerate(plans):
            png = store.read(plan.name)
            if png is not None:
                kept[i] = png
    todo = [i for i in range(len(plans)) if i not in kept]
    drawn = _draw_many(plans, todo, embed, folder, file_format, processes)
    result = FigureSet([], [], [], reused=len(kept))
    for i, plan in enumerate(plans):
        if i in kept:
            result.embedded.append(EmbeddedFigure(plan.name, plan.caption, _data_uri(kept[i])))
            continue
        one = drawn[i]
        if one.failure is not None:
            raise OutputError(one.failure[0], hint=one.failure[1])
        if one.problem is not None:
            result.problems.append(one.problem)
            continue
        if one.png is not None:
            result.embedded.append(EmbeddedFigure(plan.name, plan.caption, _data_uri(one.png)))
            if store is not None:
                store.keep(plan.name, one.png)
        if one.file is not None:
            result.files.append(one.file)
    if store is not None and todo:
        store.prune_shared()
    return result


def _save(figure: Figure, path: Path, file_format: str) -> Path:
    FigureCanvasAgg(figure)
    options: dict[str, Any] = {"dpi": _FILE_DPI} if file_format == "png" else {}
    try:
        figure.savefig(path, format=file_format, bbox_inches="tight", **options)
    except OSError as error:
        raise OutputError(
            f"cannot write the figure {path}: {why_not_writable(path, error)}.",
            hint="Give a folder you can write to with --figures.",
        ) from None
    return path


def prepare_figure_folder(folder: str | Path, file_format: str) -> Path:
    """The folder for figure files, created if missing; `OutputError` naming it otherwise."""
    if file_format not in FIGURE_FORMATS:
        raise OutputError(
            f"figure format {file_format!r} is not one of {', '.join(FIGURE_FORMATS)}.",
            hint="Use --format pdf, svg or png.",
        )
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise OutputError(
            f"cannot write figures to {path}: it is a file.",
            hint="Give a folder (new or existing) with --figures.",
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(
            f"cannot create the figure folder {path}: {why_not_writable(path, error)}.",
            hint="Give a folder you can write to with --figures.",
        ) from None
    return path


def write_figures(run: Run, folder: str | Path, *, file_format: FigureFormat = "pdf") -> FigureSet:
    """Every figure of `run` as a file in `folder` (`<name>.pdf|svg|png`), for a paper."""
    target = prepare_figure_folder(folder, file_format)
    return draw_figures(run_plans(run), embed=False, folder=target, file_format=file_format)
