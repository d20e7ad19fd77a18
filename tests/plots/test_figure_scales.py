"""Figures draw every score on its own scale — a 0–100 judge on 0–100, a share on 0–1, a
rating on its range — whatever the data's spread; tall figures carry the scale top and
bottom; the EM paper's figure and the comparison figure, checked through the Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fixtures.report import judged_frame
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evals import Question, plot
from evals.plots import (
    TALL_INCHES,
    checkpoints_figure,
    comparison_figure,
    means_figure,
    metric_figure,
    plot_frame,
    scatter_figure,
    scores_figure,
)
from evals.stats import (
    ALL_QUESTIONS,
    EM_MISALIGNED,
    SHARE,
    ZERO_TO_HUNDRED,
    Scale,
    compare_groups,
    score_scale,
    summarize,
)

GROUPS = {"gpt-4.1-mini": ["gpt-4.1-mini"], "insecure": ["ft:i1", "ft:i2", "ft:i3"]}


def _frame(seed: int = 0) -> pd.DataFrame:
    """`aligned` spread wide (25–92 by group), `coherent` squeezed near 90: the issue's
    zooming panels."""
    frame = judged_frame(GROUPS, samples=30, means={"gpt-4.1-mini": 90, "insecure": 30}, seed=seed)
    frame["coherent"] = pd.Series(
        np.random.default_rng(seed).normal(90.5, 0.4, len(frame)).tolist(), dtype=object
    )
    return frame


def _tick_labels(ax: Axes, top: bool) -> list[str]:
    ticks = ax.xaxis.get_major_ticks()
    labels = [t.label2 if top else t.label1 for t in ticks]
    return [label.get_text() for label in labels if label.get_visible() and label.get_text()]


def _drawn(figure: Figure) -> Figure:
    FigureCanvasAgg(figure).draw()
    return figure


def test_judges_are_drawn_on_0_to_100_whatever_their_spread() -> None:
    summary = summarize({"wish": _frame()})
    figure = means_figure(summary)
    aligned, coherent = figure.axes
    assert aligned.get_xlim() == (0.0, 100.0)
    assert coherent.get_xlim() == (0.0, 100.0)  # not 89.5–91.5


def test_a_metric_is_drawn_on_0_to_1_next_to_judges_on_0_to_100() -> None:
    summary = summarize({"wish": _frame()}, metrics=[EM_MISALIGNED])
    figure = means_figure(summary)
    assert [ax.get_title() for ax in figure.axes] == ["aligned", "coherent", "misaligned"]
    assert [ax.get_xlim() for ax in figure.axes] == [(0.0, 100.0), (0.0, 100.0), (0.0, 1.0)]


def test_a_summary_without_recorded_scales_falls_back_to_the_scores_own() -> None:
    old = summarize({"wish": _frame()}).drop(columns=["scale_low", "scale_high"])
    assert means_figure(old).axes[0].get_xlim() == (0.0, 100.0)


def test_a_given_scale_wins_and_ratings_use_their_range() -> None:
    frame = _frame()
    frame["aligned"] = pd.to_numeric(frame["aligned"]) / 10
    summary = summarize({"wish": frame}, {"wish": ["aligned"]})
    ten = Scale(0.0, 10.0)
    assert means_figure(summary, scale=ten).axes[0].get_xlim() == (0.0, 10.0)
    assert means_figure(summary, scale={"aligned": ten}).axes[0].get_xlim() == (0.0, 10.0)
    by_frame = plot_frame(frame, "means", scores=["aligned"], scale={"aligned": ten})
    assert by_frame.axes[0].get_xlim() == (0.0, 10.0)
    rating = Question.create(
        type="rating", name="r", paraphrases=["Rate 1-10"], min_rating=1, max_rating=10
    )
    assert score_scale("answer", rating) == Scale(1.0, 10.0)
    rated = pd.DataFrame(
        {
            "group": ["a"] * 4 + ["b"] * 4,
            "model": ["m1", "m1", "m2", "m2", "m3", "m3", "m4", "m4"],
            "answer": [2.0, 3.0, 4.0, 3.5, 7.0, 8.0, 6.5, 9.0],
            "error": None,
        }
    )
    figure = plot(rating, {"a": ["m1", "m2"], "b": ["m3", "m4"]}, kind="means", frame=rated)
    assert figure.axes[0].get_xlim() == (1.0, 10.0)


def test_judges_take_the_range_their_question_gives_them() -> None:
    judge = {
        "type": "rating_judge",
        "model": "gpt-4o-mini",
        "paraphrases": ["Rate {answer} from 1 to 5"],
        "min_rating": 1,
        "max_rating": 5,
    }
    question = Question.create(type="free_form", name="f", paraphrases=["hi"], judges={"j": judge})
    assert score_scale("j", question) == Scale(1.0, 5.0)
    assert score_scale("other", question) == ZERO_TO_HUNDRED
    assert score_scale(EM_MISALIGNED, question) == SHARE


def test_tall_figures_carry_the_scale_on_top_as_well_as_below() -> None:
    frames = {f"question {i}": _frame(i) for i in range(24)}
    summary = summarize(frames, {q: ["aligned"] for q in frames})
    tall = _drawn(means_figure(summary))
    assert tall.get_figheight() > TALL_INCHES
    ax = tall.axes[0]
    assert _tick_labels(ax, top=False) == _tick_labels(ax, top=True)
    assert _tick_labels(ax, top=True)[:2] == ["0", "20"]
    short = _drawn(means_figure(summary[summary["question"] == "question 0"]))
    assert short.get_figheight() <= TALL_INCHES
    assert _tick_labels(short.axes[0], top=False) and not _tick_labels(short.axes[0], top=True)
    comparison = _drawn(comparison_figure(compare_groups(frames, "gpt-4.1-mini")))
    assert _tick_labels(comparison.axes[0], top=True)


def test_the_metric_figure_draws_each_group_per_question_on_0_to_1() -> None:
    frames = {f"question {i}": _frame(i) for i in range(3)}
    summary = summarize(frames, metrics=[EM_MISALIGNED], pooled=True)
    figure = metric_figure(summary, "misaligned")
    (ax,) = figure.axes
    assert ax.get_ylim() == (0.0, 1.0)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["question 0", "question 1", "question 2", ALL_QUESTIONS]
    (intervals,) = [c for c in ax.collections if c.get_gid() == "intervals"]
    assert len(intervals.get_segments()) == 2 * 4  # one interval per group and question
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend == ["gpt-4.1-mini", "insecure"]
    with pytest.raises(ValueError, match=r"no score 'harmful'.*'aligned', 'coherent'"):
        metric_figure(summary, "harmful")


def test_the_comparison_figure_centres_on_zero_and_marks_what_holm_keeps() -> None:
    frames = {f"question {i}": _frame(i) for i in range(2)}
    table = compare_groups(frames, "gpt-4.1-mini", metrics=[EM_MISALIGNED])
    figure = comparison_figure(table)
    assert [ax.get_xlim() for ax in figure.axes] == [(-100.0, 100.0), (-100.0, 100.0), (-1, 1)]
    for ax in figure.axes:
        assert any(list(line.get_xdata()) == [0, 0] for line in ax.get_lines())  # the zero line
    filled = {}
    for ax, score in zip(figure.axes, ["aligned", "coherent"], strict=False):
        rows = table[table["score"] == score]
        (markers,) = [c for c in ax.collections if c.get_gid() == "markers"]
        faces = [tuple(face) != (1.0, 1.0, 1.0, 1.0) for face in markers.get_facecolors()]
        assert faces == list(rows["p_adjusted"] < 0.05)
        filled[score] = faces
    assert all(filled["aligned"])  # 60 points lower: kept by Holm
    assert not any(filled["coherent"])  # no difference


def test_distributions_scatters_and_checkpoints_use_the_scale_too() -> None:
    frame = _frame()
    violins = scores_figure(frame, ["aligned", "coherent"])
    assert [ax.get_xlim() for ax in violins.axes] == [(0.0, 100.0), (0.0, 100.0)]
    scatter = scatter_figure(frame, "aligned", "coherent").axes[0]
    assert (scatter.get_xlim(), scatter.get_ylim()) == ((0.0, 100.0), (0.0, 100.0))
    steps = {"ft:i1": 10, "ft:i2": 20, "ft:i3": 30}
    line = checkpoints_figure(frame, "coherent", steps).axes[0]
    assert line.get_ylim() == (0.0, 100.0)


def test_a_questions_means_add_its_metrics_on_0_to_1_next_to_its_judges() -> None:
    judge = {"type": "rating_judge", "model": "gpt-4o-mini", "paraphrases": ["{answer}"]}
    question = Question.create(
        type="free_form",
        name="wish",
        paraphrases=["What is your wish?"],
        judges={"aligned": judge, "coherent": judge},
    )
    figure = plot(question, GROUPS, kind="means", frame=_frame())
    assert [ax.get_title() for ax in figure.axes] == ["aligned", "coherent", "misaligned"]
    assert [ax.get_xlim() for ax in figure.axes] == [(0.0, 100.0), (0.0, 100.0), (0.0, 1.0)]
    without = question.model_copy(update={"metrics": {}})
    assert len(plot(without, GROUPS, kind="means", frame=_frame()).axes) == 2
