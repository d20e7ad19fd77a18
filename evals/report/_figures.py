"""The figures of a run, drawn with `evals.plots` (the same functions as `evals.plot`), each on
its score's true scale: embedded in the report as base64 PNG, or written as files for a paper.

Every figure has a stable name (`comparisons-all-questions`, `misaligned-per-question`,
`question-03-quick_buck-means`, …) that is its file name in `write_figures` and does not
change from one run to the next.
"""

from __future__ import annotations

import base64
import io
import re
import warnings
from collections.abc import Callable, Iterator
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
    means_figure,
    metric_figure,
    plot_frame,
)
from evals.runs import Run
from evals.stats import ALL_QUESTIONS, SHARE, describe_method

__all__ = [
    "CURVES_FIGURE",
    "FIGURE_FORMATS",
    "EmbeddedFigure",
    "FigureFormat",
    "FigurePlan",
    "FigureProblem",
    "FigureSet",
    "curves_plans",
    "draw_figures",
    "headline_plans",
    "png_data_uri",
    "prepare_figure_folder",
    "question_figure_prefix",
    "question_plans",
    "run_plans",
    "write_figures",
]

_DPI = 96
_FILE_DPI = 200
_MAX_DISTINCT_ANSWERS = 40
"""Free-form answers are drawn as shares only when they repeat (short answers)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
CURVES_FIGURE = "training-curves"
"""The name of the training-curves figure (shown under the summary, not in the headline)."""
FigureFormat = Literal["pdf", "svg", "png"]
FIGURE_FORMATS: tuple[str, ...] = ("pdf", "svg", "png")


@dataclass(frozen=True)
class FigurePlan:
    """A figure of the run, not drawn yet."""

    name: str
    """Stable and file-safe: the file name in `write_figures`."""
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


def png_data_uri(figure: Figure) -> str:
    """The figure as a `data:image/png;base64,…` URI (rendered with Agg; no window)."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, pil_kwargs={"compress_level": 3})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _interval_words(run: Run) -> str:
    return describe_method(str(run.statistics.get("method", "hierarchical")))


def _slug(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_")[:60] or "question"


def headline_plans(run: Run) -> list[FigurePlan]:
    """The figures the report opens with: the comparisons against the baseline (pooled over
    the questions, then per question), each derived metric per question (the EM paper's
    figure), and every question's means on one page."""
    plans: list[FigurePlan] = []
    comparisons = run.comparisons
    groups = list(run.groups)
    if comparisons is not None and not comparisons.empty:
        baseline = str(comparisons["baseline"].iloc[0])
        pooled = comparisons[comparisons["question"] == ALL_QUESTIONS]
        holm = f"filled markers: Holm-adjusted p < 0.05 over the run's {len(comparisons)} tests"
        if not pooled.empty:
            plans.append(
                FigurePlan(
                    "comparisons-all-questions",
                    f"Each group minus {baseline}, over all questions (each model averaged over "
                    f"the questions, then the models compared), with its 95% interval; {holm}.",
                    lambda: comparison_figure(
                        pooled, groups=groups, title=f"Against {baseline}, all questions"
                    ),
                )
            )
        per_question = comparisons[comparisons["question"] != ALL_QUESTIONS]
        if not per_question.empty:
            plans.append(
                FigurePlan(
                    "comparisons-per-question",
                    f"Each group minus {baseline}, per question, with its 95% interval; {holm}.",
                    lambda: comparison_figure(
                        per_question, groups=groups, title=f"Against {baseline}, per question"
                    ),
                )
            )
    summary = run.summary
    if not summary.empty:
        shares = summary[
            (summary["scale_low"] == SHARE.low) & (summary["scale_high"] == SHARE.high)
        ]
        for metric in dict.fromkeys(shares["score"].astype(str)):
            plans.append(
                FigurePlan(
                    f"{_slug(metric)}-per-question",
                    f"The share '{metric}' per question and group with its 95% interval "
                    f"({_interval_words(run)}); the pooled row last.",
                    partial(metric_figure, summary, metric, groups=groups),
                )
            )
        if summary["question"].nunique() >= 2:
            plans.append(
                FigurePlan(
                    "means-per-question",
                    f"Each group's mean with its 95% interval ({_interval_words(run)}), per "
                    "question and score, each score on its own scale.",
                    lambda: means_figure(summary, groups=groups, title="Mean score per group"),
                )
            )
    return plans


def curves_plans(run: Run) -> list[FigurePlan]:
    """The training curves of the run's fine-tuned models, one colour per group and one line
    per job (seed), when the run folder holds them."""
    curves = run.training_curves()
    if curves is None or curves.empty:
        return []
    jobs = curves.groupby("group")["job_id"].nunique()
    counts = ", ".join(f"{group} ({count})" for group, count in jobs.items())

    def draw() -> Figure:
        from labmgr.finetuning import group_curves_figure

        return group_curves_figure(curves, "Training curves of the run's models")

    return [
        FigurePlan(
            CURVES_FIGURE,
            f"Training curves per step from each job's results file, one colour per group and "
            f"one line per job: {counts}.",
            draw,
        )
    ]


def _steps(run: Run) -> tuple[dict[str, int | None], dict[str, str | None]]:
    facts = run.info.get("models", {})
    steps = {m: f.get("step") for m, f in facts.items() if isinstance(f, dict)}
    jobs = {m: f.get("job") for m, f in facts.items() if isinstance(f, dict)}
    return steps, jobs


def _has_checkpoints(frame: pd.DataFrame, steps: dict[str, int | None]) -> bool:
    known = {steps.get(str(m)) for m in frame["model"].unique()} - {None}
    return len(known) >= 2


def question_figure_prefix(run: Run, name: str) -> str:
    """The start of the names of one question's figures: `question-03-quick_buck-`."""
    return f"question-{run.questions.index(name) + 1:02d}-{_slug(name)}-"


def question_plans(run: Run, name: str) -> list[FigurePlan]:
    """One question's figures: its means (scores and metrics, from the run's summary), the
    distribution of its scores, two scores against each other, a score against training
    step, next-token or answer shares."""
    stem = question_figure_prefix(run, name).removesuffix("-")
    frame = run.samples(name)
    scores = run.scores(name)
    scales = {s: scale for s, scale in run.scales(name).items() if s in scores}
    order = list(run.groups)
    kind = run.question_info(name).get("type")
    summary = run.summary[run.summary["question"].astype(str) == name]
    plans: list[FigurePlan] = []
    if not summary.empty:
        plans.append(
            FigurePlan(
                f"{stem}-means",
                f"Each group's mean with its 95% interval: {_interval_words(run)}.",
                lambda: means_figure(summary, groups=order, title=name),
            )
        )
    if scores:
        plans.append(
            FigurePlan(
                f"{stem}-scores",
                "Distribution of scores per group (quartiles dashed; mean marked).",
                lambda: plot_frame(
                    frame, "scores", name=name, scores=scores, order=order, scale=scales
                ),
            )
        )
        if len(scores) >= 2:
            plans.append(
                FigurePlan(
                    f"{stem}-scatter",
                    f"{scores[0]} against {scores[1]}, one point per sample.",
                    lambda: plot_frame(
                        frame, "scatter", name=name, scores=scores, order=order, scale=scales
                    ),
                )
            )
        steps, jobs = _steps(run)
        if _has_checkpoints(frame, steps):
            plans.append(
                FigurePlan(
                    f"{stem}-checkpoints",
                    f"{scores[0]} against training step, one line per fine-tuning job.",
                    lambda: checkpoints_figure(
                        frame,
                        scores[0],
                        steps,
                        jobs=jobs,
                        order=order,
                        title=name,
                        scale=scales,
                    ),
                )
            )
    if kind == "next_token":
        plans.append(
            FigurePlan(
                f"{stem}-next-token",
                "Mean probability of the first token per group (rare tokens in [OTHER]).",
                lambda: plot_frame(frame, "next_token", name=name, order=order, min_fraction=0.02),
            )
        )
    elif kind == "free_form" and 0 < frame["answer"].nunique() <= _MAX_DISTINCT_ANSWERS:
        plans.append(
            FigurePlan(
                f"{stem}-answers",
                "Share of each answer per group (rare answers in [OTHER]).",
                lambda: answers_figure(frame, order=order, title=name, min_fraction=0.02),
            )
        )
    return plans


def run_plans(run: Run) -> list[FigurePlan]:
    """Every figure of the run: the headline figures, the training curves, then each
    question's."""
    return [
        *headline_plans(run),
        *curves_plans(run),
        *(plan for name in run.questions for plan in question_plans(run, name)),
    ]


def _drawn(plans: list[FigurePlan]) -> Iterator[tuple[FigurePlan, Figure | FigureProblem]]:
    for plan in plans:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield plan, plan.draw()
        except (ValueError, TypeError, KeyError) as error:
            yield (
                plan,
                FigureProblem(plan.name, f"{plan.caption.split(',')[0]}: not drawn ({error})"),
            )


def draw_figures(
    plans: list[FigurePlan],
    *,
    embed: bool = True,
    folder: Path | None = None,
    file_format: FigureFormat = "pdf",
) -> FigureSet:
    """Draw each plan once: embedded as PNG (`embed`) and/or written to `folder` as
    `<name>.<file_format>`. A figure that cannot be drawn is a problem, not an error."""
    result = FigureSet([], [], [])
    for plan, drawn in _drawn(plans):
        if isinstance(drawn, FigureProblem):
            result.problems.append(drawn)
            continue
        if embed:
            result.embedded.append(EmbeddedFigure(plan.name, plan.caption, png_data_uri(drawn)))
        if folder is not None:
            result.files.append(_save(drawn, folder / f"{plan.name}.{file_format}", file_format))
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
    """Every figure of `run` as a file in `folder` (`<name>.pdf|svg|png`, names stable from
    run to run), for a paper; figures that cannot be drawn are listed in `problems`."""
    target = prepare_figure_folder(folder, file_format)
    return draw_figures(run_plans(run), embed=False, folder=target, file_format=file_format)
