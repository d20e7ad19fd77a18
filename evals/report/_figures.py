"""The figures of a run, drawn with `evals.plots` (the same functions as `evals.plot`) and
embedded as base64 PNG.

A report draws its figures in parallel, in worker processes (as many as the machine has
cores), and keeps each PNG beside the report with a digest of what it was drawn from (its
question's samples file, the run's groups, statistics settings and model facts, its caption):
when the report is written again, a figure whose digest did not change is read back instead
of drawn.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import multiprocessing
import os
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evals.plots import answers_figure, checkpoints_figure, means_figure, plot_frame
from evals.runs import Run

__all__ = [
    "EmbeddedFigure",
    "curves_figure",
    "draw_figures",
    "headline_figure",
    "png_data_uri",
    "question_figures",
]

_DPI = 96
_MAX_DISTINCT_ANSWERS = 40
"""Free-form answers are drawn as shares only when they repeat (short answers)."""
_FIGURE_FORMAT = 1
"""Part of every figure's digest: bumped when the figures' drawing code changes."""
_IN_PROCESS_BELOW = 4
"""Fewer figures to draw than this are drawn in this process (a pool costs a start-up)."""


@dataclass(frozen=True)
class EmbeddedFigure:
    caption: str
    data_uri: str


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, pil_kwargs={"compress_level": 3})
    return buffer.getvalue()


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def png_data_uri(figure: Figure) -> str:
    """The figure as a `data:image/png;base64,…` URI (rendered with Agg; no window)."""
    return _data_uri(_png(figure))


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


# ---- all of a run's figures: in parallel processes, reusing those whose input is unchanged ----

_RUN: Run | None = None
"""The run the worker processes draw (inherited when they are forked, else read)."""


def _use_run(path: str) -> None:
    global _RUN
    if _RUN is None or str(_RUN.path) != path:
        from evals.runs import load_run

        _RUN = load_run(path)


def _draw_one(name: str, index: int) -> tuple[bytes | None, str | None]:
    """Figure `index` of question `name` of the worker's run: its PNG, or why not."""
    assert _RUN is not None
    caption, draw = list(_attempts(_RUN, name))[index]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figure = draw()
            png = _png(figure)
        import matplotlib.pyplot as plt

        plt.close(figure)
        return png, None
    except (ValueError, TypeError, KeyError) as error:
        return None, f"{caption.split(',')[0]}: not drawn ({error})"


def _digest(run: Run, name: str, index: int, caption: str) -> str:
    """What figure `index` of question `name` is drawn from, hashed."""
    entry = run.question_info(name)
    samples = run.path / entry["samples_file"]
    content = hashlib.sha256(samples.read_bytes()).hexdigest() if samples.is_file() else ""
    facts = {
        "format": _FIGURE_FORMAT,
        "question": name,
        "index": index,
        "caption": caption,
        "samples": content,
        "groups": run.groups,
        "models": run.info.get("models", {}),
        "statistics": _statistics(run),
        "entry": {k: entry.get(k) for k in ("type", "scores", "judges")},
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def _stem(name: str, index: int) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60]
    return f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}-{index}"


def draw_figures(
    run: Run, store: Path | None = None, *, processes: int | None = None
) -> dict[str, tuple[list[EmbeddedFigure], list[str]]]:
    """Every question's figures and notes (as `question_figures`), drawn in up to
    `processes` worker processes (default: one per core). With `store` (a folder beside the
    report), each PNG is kept there with its digest, and a figure whose digest is unchanged
    is read back instead of drawn."""
    jobs: list[tuple[str, int, str, str]] = []
    for name in run.questions:
        for index, (caption, _) in enumerate(_attempts(run, name)):
            digest = _digest(run, name, index, caption) if store is not None else ""
            jobs.append((name, index, caption, digest))
    drawn: dict[tuple[str, int], tuple[bytes | None, str | None]] = {}
    todo = []
    for name, index, _caption, digest in jobs:
        if store is not None:
            png_file = store / f"{_stem(name, index)}.png"
            digest_file = png_file.with_suffix(".digest")
            try:
                if digest_file.read_text() == digest:
                    drawn[(name, index)] = (png_file.read_bytes(), None)
                    continue
            except OSError:
                pass
        todo.append((name, index))
    fresh = _draw_many(run, todo, processes)
    drawn.update(fresh)
    if store is not None:
        _keep(store, [job for job in jobs if (job[0], job[1]) in fresh], drawn)
    result: dict[str, tuple[list[EmbeddedFigure], list[str]]] = {
        name: ([], []) for name in run.questions
    }
    for name, index, caption, _ in jobs:
        png, problem = drawn[(name, index)]
        figures, problems = result[name]
        if png is not None:
            figures.append(EmbeddedFigure(caption, _data_uri(png)))
        elif problem is not None:
            problems.append(problem)
    return result


def _draw_many(
    run: Run, todo: list[tuple[str, int]], processes: int | None
) -> dict[tuple[str, int], tuple[bytes | None, str | None]]:
    global _RUN
    workers = min(processes or os.cpu_count() or 1, len(todo))
    _RUN = run
    if workers < 2 or len(todo) < _IN_PROCESS_BELOW:
        return {job: _draw_one(*job) for job in todo}
    methods = multiprocessing.get_all_start_methods()
    # Forked workers inherit the run (its frames already read); others read it again.
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_use_run, initargs=(str(run.path),)
    ) as pool:
        futures = {job: pool.submit(_draw_one, *job) for job in todo}
        return {job: future.result() for job, future in futures.items()}


def _keep(
    store: Path,
    jobs: list[tuple[str, int, str, str]],
    drawn: dict[tuple[str, int], tuple[bytes | None, str | None]],
) -> None:
    """Keep each drawn PNG with its digest (best effort: a figure not kept is drawn again)."""
    try:
        store.mkdir(parents=True, exist_ok=True)
        for name, index, _, digest in jobs:
            png, _problem = drawn[(name, index)]
            if png is None:
                continue
            png_file = store / f"{_stem(name, index)}.png"
            png_file.write_bytes(png)
            png_file.with_suffix(".digest").write_text(digest)
    except OSError:
        pass
