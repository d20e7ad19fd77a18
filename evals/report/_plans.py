"""The figures a run has, not drawn yet, each with a stable name (`comparisons-all-questions`,
`question-03-quick_buck-means`), all with the run's groups in order."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from evals.runs import Run
from evals.stats import ALL_QUESTIONS, SHARE, describe_method, folded_levels, headline_score

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_MAX_DISTINCT_ANSWERS = 40
"""Free-form answers are drawn as shares only when they repeat (short answers)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
CURVES_FIGURE = "training-curves"
COST_FIGURE = "score-against-cost"


@dataclass(frozen=True)
class FigurePlan:
    """A figure of the run, not drawn yet (`name`: stable and file-safe)."""

    name: str
    caption: str
    draw: Callable[[], Figure]


def _draw(kind: str, *args: Any, **options: Any) -> Figure:
    """`evals.plots.<kind>(*args, **options)`, imported when a figure is first drawn: a
    report whose figures are all kept draws none, and matplotlib and seaborn take a second."""
    import evals.plots

    figure: Figure = getattr(evals.plots, kind)(*args, **options)
    return figure


def _plan(name: str, caption: str, kind: str, /, *args: Any, **options: Any) -> FigurePlan:
    """The plan of drawing `evals.plots.<kind>(*args, **options)`."""
    return FigurePlan(name, caption, partial(_draw, kind, *args, **options))


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
        baselines = list(dict.fromkeys(comparisons["baseline"].astype(str)))
        baseline = baselines[0] if len(baselines) == 1 else "its own baseline"
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
                draw = partial(_draw, "comparison_figure", rows, groups=groups, title=title)
                plans.append(FigurePlan(f"comparisons-{name}", caption, draw))
    summary = folded_levels(run.summary, run.by)
    if summary.empty:
        return plans
    words = describe_method(run.method)
    shares = summary[(summary["scale_low"] == SHARE.low) & (summary["scale_high"] == SHARE.high)]
    for metric in dict.fromkeys(shares["score"].astype(str)):
        name = f"{_slug(metric)}-per-question"
        caption = f"{_share_words(metric)} per question and group with its 95% interval "
        caption += f"({words}); the pooled row last."
        plans.append(_plan(name, caption, "metric_figure", summary, metric, groups=groups))
    if summary["question"].nunique() >= 2:
        caption = f"Each group's mean with its 95% interval ({words}), per question and score, "
        caption += "each score on its own scale."
        means = partial(_draw, "means_figure", summary, groups=groups, title="Mean score per group")
        plans.append(FigurePlan("means-per-question", caption, means))
    return plans


def _share_words(score: str) -> str:
    """How a caption names a share: `correct` is the accuracy."""
    return "Accuracy (the share 'correct')" if score == "correct" else f"The share '{score}'"


def cost_plans(run: Run) -> list[FigurePlan]:
    costs = run.costs()
    if costs is None or costs.empty or costs["score"].isna().all():
        return []
    score = headline_score(costs["score"].dropna())  # some score: not all are missing
    caption = (
        f"{score} (its 95% interval over the group's seeds) against the answers' cost per "
        "1,000 samples, per group (filled) and model (hollow); judge costs are not included."
    )
    return [_plan(COST_FIGURE, caption, "cost_figure", costs, score, groups=list(run.groups))]


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
    drawn = {"name": name, "order": order, "scores": scores, "scale": scales}  # for plot_frame
    plans: list[FigurePlan] = []

    def add(suffix: str, caption: str, kind: str, *args: Any, **options: Any) -> None:
        plans.append(_plan(prefix + suffix, caption, kind, *args, **options))

    if not summary.empty:
        caption = f"Each group's mean with its 95% interval: {describe_method(run.method)}."
        add("means", caption, "means_figure", summary, groups=order, title=name)
    if scores:
        caption = "Distribution of scores per group (quartiles dashed; mean marked)."
        add("scores", caption, "plot_frame", frame, "scores", **drawn)
        if len(scores) >= 2:
            caption = f"{scores[0]} against {scores[1]}, one point per sample."
            add("scatter", caption, "plot_frame", frame, "scatter", **drawn)
        facts = {m: f for m, f in run.info.get("models", {}).items() if isinstance(f, dict)}
        steps = {m: f.get("step") for m, f in facts.items()}
        if len({steps.get(str(m)) for m in frame["model"].unique()} - {None}) >= 2:
            caption = f"{scores[0]} against training step, one line per fine-tuning job."
            add("checkpoints", caption, "plot_frame", frame, "checkpoints", steps=facts, **drawn)
    if kind == "next_token":
        caption = "Mean probability of the first token per group (rare tokens in [OTHER])."
        add("next-token", caption, "plot_frame", frame, "next_token", min_fraction=0.02, **drawn)
    elif kind in ("free_form", "multiple_choice") and (
        0 < frame["answer"].nunique() <= _MAX_DISTINCT_ANSWERS
    ):
        caption = "Share of each answer per group (rare answers in [OTHER])."
        add("answers", caption, "answers_figure", frame, order=order, title=name, min_fraction=0.02)
    return plans


def run_plans(run: Run) -> list[FigurePlan]:
    """Every figure of the run: the headline's, cost, training curves, then each question's."""
    return [
        *headline_plans(run),
        *cost_plans(run),
        *curves_plans(run),
        *(plan for name in run.questions for plan in question_plans(run, name)),
    ]
