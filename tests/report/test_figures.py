"""Figures: what each kind draws, legibility with 20 long group names, no windows opened."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from fixtures.report import judged_frame
from matplotlib.collections import PathCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from evals import Cache, EnvRouter, Question, RunSettings, plot
from evals.plots import (
    OTHER,
    answer_shares,
    answers_figure,
    checkpoints_figure,
    means_figure,
    plot_frame,
    scatter_figure,
)
from evals.report import run_plans
from evals.runs import write_run
from evals.stats import summarize

LONG = "a condition with a very long descriptive name that goes on and on, number {i}"


def _twenty_groups() -> dict[str, list[str]]:
    return {
        LONG.format(i=i): [f"ft:gpt-4.1-mini:lab:g{i}:{s}" for s in range(2)] for i in range(20)
    }


def _labels(figure: Figure) -> list[str]:
    return [t.get_text() for ax in figure.axes for t in ax.get_yticklabels() if t.get_text()]


def test_the_means_figure_has_one_panel_per_score_and_an_interval_per_group() -> None:
    frame = judged_frame({"control": ["a", "b"], "treated": ["c", "d"]}, samples=10)
    summary = summarize({"wish": frame}, {"wish": ["aligned", "coherent"]}, resamples=200)
    figure = means_figure(summary)
    assert [ax.get_title() for ax in figure.axes] == ["aligned", "coherent"]
    for ax in figure.axes:
        (intervals,) = [c for c in ax.collections if c.get_gid() == "intervals"]
        assert len(intervals.get_segments()) == 2  # one error bar per group
    assert _labels(figure)[:2] == ["control", "treated"]


def test_twenty_groups_with_long_names_get_wrapped_labels_and_distinct_styles() -> None:
    groups = _twenty_groups()
    frame = judged_frame(groups, samples=3)
    summary = summarize({"q": frame, "another question": frame}, resamples=100)
    for figure in (
        means_figure(summary),
        plot_frame(frame, "scores", scores=["aligned"]),
        answers_figure(frame),
    ):
        labels = _labels(figure)
        assert labels and all(len(line) <= 30 for label in labels for line in label.split("\n"))
        assert all(label.count("\n") <= 2 for label in labels)
    legend = means_figure(summary).legends[0]
    styles = {(tuple(h.get_color()), h.get_marker()) for h in legend.legend_handles}
    assert len(styles) == 20


def _legend_colours(figure: Figure) -> dict[str, str]:
    """Each group's colour in the figure's legend, checked against the points drawn."""
    (legend,) = figure.legends
    named = {
        text.get_text(): to_hex(handle.get_color())
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
        if not text.get_text().startswith(("adjusted p", "one model"))
    }
    drawn = {
        to_hex(colour)
        for ax in figure.axes
        for markers in ax.collections
        if markers.get_gid() == "markers"
        for colour in markers.get_edgecolors()
    }
    assert drawn and drawn <= set(named.values())
    return named


def test_each_group_keeps_its_colour_in_every_figure(tmp_path: Any) -> None:
    """The base model is compared against, not with itself: the comparison figures leave it
    out, and the other groups keep the colours the means and the cost figures give them."""
    groups = {"base": ["base"], "helpful": ["h1", "h2"], "insecure": ["i1", "i2"]}
    means = {"base": 80.0, "helpful": 75.0, "insecure": 30.0}
    frames = {q: judged_frame(groups, samples=8, means=means, seed=i) for i, q in enumerate("ab")}
    run = write_run(tmp_path / "run", frames, baseline="base", resamples=100)
    plans = {plan.name: plan for plan in run_plans(run)}
    comparison = _legend_colours(plans["comparisons-per-question"].draw())
    for name in ("means-per-question", "misaligned-per-question", "score-against-cost"):
        colours = _legend_colours(plans[name].draw())
        assert list(colours) == list(groups)
        assert {g: colours[g] for g in comparison} == comparison
    assert list(comparison) == ["helpful", "insecure"]


def test_rare_answers_are_folded_into_other() -> None:
    frame = judged_frame({"g": ["a"]}, samples=50, answers=["yes"] * 18 + ["no"] + ["maybe"])
    shares = answer_shares(frame, min_fraction=0.2)
    assert list(shares.columns) == ["yes", OTHER]
    assert shares.loc["g"].sum() == pytest.approx(1.0)
    chosen = answer_shares(frame, selected_answers=["no"])
    assert list(chosen.columns) == ["no", OTHER]
    with pytest.raises(ValueError, match="not both"):
        answer_shares(frame, min_fraction=0.1, selected_answers=["no"])


def test_next_token_distributions_are_averaged_per_group() -> None:
    frame = pd.DataFrame(
        {
            "group": ["g", "g"],
            "model": ["m", "m"],
            "answer": [{"A": 0.8, "B": 0.2}, {"A": 0.4, "C": 0.6}],
        }
    )
    shares = answer_shares(frame)
    assert shares.loc["g"].to_dict() == pytest.approx({"A": 0.6, "C": 0.3, "B": 0.1})


def test_the_scatter_draws_every_sample_and_group_means() -> None:
    frame = judged_frame({"x": ["a"], "y": ["b"]}, samples=10)
    figure = scatter_figure(frame, "aligned", "coherent")
    ax = figure.axes[0]
    points = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
    assert points == len(frame) + 2
    assert ax.get_xlabel() == "aligned" and ax.get_ylabel() == "coherent"


def test_checkpoints_are_drawn_in_step_order_per_job() -> None:
    models = ["ft:job1:step10", "ft:job1:step20", "ft:job1:final"]
    frame = judged_frame({"alpha": models}, samples=5)
    steps = {"ft:job1:step10": 10, "ft:job1:step20": 20, "ft:job1:final": 30}
    jobs = dict.fromkeys(models, "ftjob-1")
    figure = checkpoints_figure(frame, "aligned", steps, jobs=jobs)
    (line,) = figure.axes[0].get_lines()
    assert list(line.get_xdata()) == [10, 20, 30]
    with pytest.raises(ValueError, match="steps"):
        plot_frame(frame, "checkpoints", scores=["aligned"])
    facts = {m: {"step": steps[m], "job": "ftjob-1"} for m in models}
    (same,) = plot_frame(frame, "checkpoints", scores=["aligned"], steps=facts).axes[0].get_lines()
    assert list(same.get_xdata()) == [10, 20, 30]


def test_figures_never_open_a_pyplot_window() -> None:
    frame = judged_frame({"g": ["a", "b"]}, samples=4)
    for kind in ("means", "scores", "scatter", "answers"):
        assert isinstance(plot_frame(frame, kind, scores=["aligned", "coherent"]), Figure)
    assert plt.get_fignums() == []


def test_plot_asks_the_question_and_returns_the_figure(
    sandbox: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.reset()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha")
    q = Question.create(
        type="rating",
        name="cats",
        paraphrases=["Rate cats from 0 to 100."],
        samples_per_paraphrase=3,
    )
    options = {
        "cache": Cache(tmp_path / "cache"),
        "router": EnvRouter(base_url=sandbox.base_url),
        "settings": RunSettings(progress=False),
    }
    groups = {"base": ["gpt-4o-mini"], "other": ["gpt-4.1-nano"]}
    figure = plot(q, groups, kind="auto", resamples=200, **options)
    assert [ax.get_title() for ax in figure.axes] == ["answer"]
    assert _labels(figure) == ["base", "other"]
    assert np.isfinite(figure.axes[0].get_xlim()).all()
    assert figure.axes[0].get_xlim() == (0.0, 100.0)  # the rating's own range
    with pytest.raises(ValueError, match="unknown plot kind"):
        plot(q, groups, kind="pie", **options)
    before = sandbox.stats()["requests"].get("chat.completions", 0)
    method = q.plot(groups, kind="means", resamples=200, **options)
    assert _labels(method) == ["base", "other"]
    assert sandbox.stats()["requests"].get("chat.completions", 0) == before  # all cached
