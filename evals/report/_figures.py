"""The figures of a run, drawn with `evals.plots` (the same functions as `evals.plot`) and
embedded as base64 PNG."""

from __future__ import annotations

import base64
import io
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evals.plots import answers_figure, checkpoints_figure, means_figure, plot_frame
from evals.runs import Run

__all__ = [
    "EmbeddedFigure",
    "curves_figure",
    "headline_figure",
    "png_data_uri",
    "question_figures",
]

_DPI = 96
_MAX_DISTINCT_ANSWERS = 40
"""Free-form answers are drawn as shares only when they repeat (short answers)."""


@dataclass(frozen=True)
class EmbeddedFigure:
    caption: str
    data_uri: str


def png_data_uri(figure: Figure) -> str:
    """The figure as a `data:image/png;base64,…` URI (rendered with Agg; no window)."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, pil_kwargs={"compress_level": 3})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def headline_figure(run: Run) -> EmbeddedFigure | None:
    """All questions' means in one figure (a single question's own section has it already)."""
    if run.summary.empty or run.summary["question"].nunique() < 2:
        return None
    figure = means_figure(run.summary, groups=list(run.groups), title="Mean score per group")
    return EmbeddedFigure(
        "Each group's mean with its 95% interval, per question and score.", png_data_uri(figure)
    )


def curves_figure(run: Run) -> EmbeddedFigure | None:
    """The training curves of the run's fine-tuned models, one colour per group and one line
    per job (seed), when the run folder holds them."""
    curves = run.training_curves()
    if curves is None or curves.empty:
        return None
    from labmgr.finetuning import group_curves_figure

    jobs = curves.groupby("group")["job_id"].nunique()
    counts = ", ".join(f"{group} ({count})" for group, count in jobs.items())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figure = group_curves_figure(curves, "Training curves of the run's models")
    return EmbeddedFigure(
        f"Training curves per step from each job's results file, one colour per group and "
        f"one line per job: {counts}.",
        png_data_uri(figure),
    )


def _steps(run: Run) -> tuple[dict[str, int | None], dict[str, str | None]]:
    facts = run.info.get("models", {})
    steps = {m: f.get("step") for m, f in facts.items() if isinstance(f, dict)}
    jobs = {m: f.get("job") for m, f in facts.items() if isinstance(f, dict)}
    return steps, jobs


def _has_checkpoints(frame: pd.DataFrame, steps: dict[str, int | None]) -> bool:
    known = {steps.get(str(m)) for m in frame["model"].unique()} - {None}
    return len(known) >= 2


def _attempts(run: Run, name: str) -> Iterator[tuple[str, Any]]:
    frame = run.samples(name)
    scores = run.scores(name)
    order = list(run.groups)
    kind = run.question_info(name).get("type")
    if scores:
        yield (
            "Mean per group with 95% interval (hierarchical bootstrap over models, then samples).",
            (
                lambda: plot_frame(
                    frame, "means", name=name, scores=scores, order=order, **_statistics(run)
                )
            ),
        )
        yield (
            "Distribution of scores per group (quartiles dashed; mean marked).",
            (lambda: plot_frame(frame, "scores", name=name, scores=scores, order=order)),
        )
        if len(scores) >= 2:
            yield (
                f"{scores[0]} against {scores[1]}, one point per sample.",
                (lambda: plot_frame(frame, "scatter", name=name, scores=scores, order=order)),
            )
        steps, jobs = _steps(run)
        if _has_checkpoints(frame, steps):
            yield (
                f"{scores[0]} against training step, one line per fine-tuning job.",
                (
                    lambda: checkpoints_figure(
                        frame, scores[0], steps, jobs=jobs, order=order, title=name
                    )
                ),
            )
    if kind == "next_token":
        yield (
            "Mean probability of the first token per group (rare tokens in [OTHER]).",
            (lambda: plot_frame(frame, "next_token", name=name, order=order, min_fraction=0.02)),
        )
    elif kind == "free_form" and 0 < frame["answer"].nunique() <= _MAX_DISTINCT_ANSWERS:
        yield (
            "Share of each answer per group (rare answers in [OTHER]).",
            (lambda: answers_figure(frame, order=order, title=name, min_fraction=0.02)),
        )


def _statistics(run: Run) -> dict[str, Any]:
    stats = run.info.get("settings", {}).get("statistics", {})
    return {k: stats[k] for k in ("method", "resamples", "seed") if k in stats}


def question_figures(run: Run, name: str) -> tuple[list[EmbeddedFigure], list[str]]:
    """The question's figures, and a note for each that could not be drawn."""
    figures: list[EmbeddedFigure] = []
    problems: list[str] = []
    for caption, draw in _attempts(run, name):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                figures.append(EmbeddedFigure(caption, png_data_uri(draw())))
        except (ValueError, TypeError, KeyError) as error:
            problems.append(f"{caption.split(',')[0]}: not drawn ({error})")
    return figures, problems
