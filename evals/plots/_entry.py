"""`plot(question, groups, kind=…)` and `plot_frame`: the figures of one question, by kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
from matplotlib.figure import Figure

from evals.plots._axes import ScaleArgument, scale_for
from evals.plots._distributions import answers_figure, scores_figure
from evals.plots._intervals import means_figure
from evals.plots._relations import checkpoints_figure, scatter_figure
from evals.stats import Metric, score_columns, summarize

if TYPE_CHECKING:
    from evals.questions import Question

PlotKind = Literal["auto", "means", "answers", "next_token", "scores", "scatter", "checkpoints"]
KINDS: tuple[str, ...] = ("means", "answers", "next_token", "scores", "scatter", "checkpoints")
_DF_OPTIONS = {"cache", "router", "settings", "price"}
_STATS_OPTIONS = ("method", "resamples", "seed", "confidence")


def plot_frame(
    frame: pd.DataFrame,
    kind: PlotKind | str = "auto",
    *,
    name: str = "question",
    scores: Sequence[str] | None = None,
    order: Sequence[str] | None = None,
    scale: ScaleArgument = None,
    metrics: Sequence[Metric] = (),
    **options: Any,
) -> Figure:
    """A figure of one question's frame (as `q.df` returns it), its groups coloured by their
    place in `order`; `options` go to the figure function (`min_fraction=`, `x=`/`y=`,
    `steps=`/`jobs=` or model facts for checkpoints, `title=`, …). `scale`: one for all
    scores or one per score. `metrics` add their own panels, on 0–1, to `means`."""
    score_list = list(scores) if scores is not None else score_columns(frame)
    if kind == "auto" and score_list:
        kind = "means"
    elif kind == "auto":  # distributions of the first token, else answer shares
        answers = frame["answer"].dropna()
        kind = "next_token" if len(answers) and isinstance(answers.iloc[0], Mapping) else "answers"
    if kind not in KINDS:
        raise ValueError(f"unknown plot kind {kind!r}; use one of {', '.join(KINDS)} or 'auto'")
    title = options.pop("title", name)
    if kind == "means":
        if not score_list:
            raise ValueError(f"question {name!r} has no numeric score; try kind='answers'")
        scales = {name: {s: scale_for(s, scale) for s in score_list}}
        stats = {k: options.pop(k) for k in _STATS_OPTIONS if k in options}
        summary = summarize(
            {name: frame}, {name: score_list}, metrics=metrics, scales=scales, **stats
        )
        return means_figure(summary, groups=order, title=title, **options)
    if kind in ("answers", "next_token"):
        if kind == "next_token":
            options.setdefault("xlabel", "mean probability of the first token")
            options.setdefault("legend_title", "first token")
        return answers_figure(frame, order=order, title=title, **options)
    if kind == "scores":
        return scores_figure(frame, score_list, order=order, title=title, scale=scale, **options)
    if kind == "scatter":
        x = options.pop("x", score_list[0] if len(score_list) > 0 else None)
        y = options.pop("y", score_list[1] if len(score_list) > 1 else None)
        if x is None or y is None:
            raise ValueError(f"a scatter needs two scores; question {name!r} has {score_list}")
        return scatter_figure(frame, x, y, order=order, title=title, scale=scale, **options)
    score = options.pop("score", score_list[0] if score_list else None)
    if score is None:
        raise ValueError(f"question {name!r} has no numeric score to follow over checkpoints")
    steps = options.pop("steps", None)
    if not steps:
        raise ValueError("a checkpoint figure needs steps={model: training step}")
    if all(isinstance(v, Mapping) for v in steps.values()):
        # Model facts as `groups_from_database` returns them: {model: {"step", "job", …}}.
        options.setdefault("jobs", {m: f.get("job") for m, f in steps.items()})
        steps = {m: f.get("step") for m, f in steps.items()}
    return checkpoints_figure(frame, score, steps, order=order, title=title, scale=scale, **options)


def plot(
    question: Question,
    groups: Mapping[str, list[str]],
    kind: PlotKind | str = "auto",
    **options: Any,
) -> Figure:
    """Ask `question` of `groups` (cached, like `q.df`) and draw it on the scales the question
    gives its scores. `cache=`, `router=`, `settings=`, `price=` and RunSettings fields go to
    `q.df`, the rest to `plot_frame`; `frame=` draws an existing DataFrame instead."""
    from evals.runner import RUN_OPTIONS

    df_keys = _DF_OPTIONS | RUN_OPTIONS
    df_options = {k: options.pop(k) for k in list(options) if k in df_keys}
    frame = options.pop("frame", None)
    if frame is None:
        frame = question.df(groups, **df_options)
    scores = score_columns(frame, question)
    scales = {s: scale for s, scale in question.score_scales().items() if s in scores}
    if kind in ("auto", "means"):
        options.setdefault("metrics", question.derived_metrics())
    return plot_frame(
        frame,
        kind,
        name=question.name,
        scores=scores,
        order=list(groups),
        scale=options.pop("scale", scales),
        **options,
    )
