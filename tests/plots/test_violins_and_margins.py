"""The score violins are a Gaussian kernel density (Scott's bandwidth, as scipy's) cut to the
data; figures laid out by fitted margins keep every label inside the figure and off the
neighbouring panel."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures.report import judged_frame
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from scipy.stats import gaussian_kde

from evals.plots import means_figure, scatter_figure, scores_figure
from evals.plots._violins import GRID_POINTS, VIOLIN_WIDTH, draw_violins, violin_density
from evals.stats import summarize

LONG_GROUP = "a group name long enough to need the widest margin of all"


def test_the_violin_density_is_scipys_gaussian_kde_with_scotts_bandwidth() -> None:
    values = np.random.default_rng(3).normal(60, 12, 400).round()  # judges repeat values
    estimate = violin_density(values)
    assert estimate is not None
    support, density = estimate
    assert len(support) == GRID_POINTS
    assert support[0] == values.min() and support[-1] == values.max()
    assert density == pytest.approx(gaussian_kde(values, bw_method="scott")(support), rel=1e-9)


def test_a_row_that_does_not_vary_has_no_density() -> None:
    assert violin_density(np.array([70.0, 70.0, 70.0])) is None
    assert violin_density(np.array([70.0])) is None
    assert violin_density(np.array([np.nan, 5.0])) is None


def test_violins_are_equally_wide_at_their_peak_and_stay_within_the_data() -> None:
    rng = np.random.default_rng(0)
    rows = [rng.normal(20, 5, 300).clip(0, 100), rng.uniform(60, 100, 50), np.full(10, 42.0)]
    figure = Figure()
    ax = figure.subplots()
    draw_violins(ax, rows, [(0.1, 0.2, 0.7), (0.8, 0.5, 0.1), (0.2, 0.6, 0.3)])
    bodies = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bodies) == 1
    outlines = [path.vertices for path in bodies[0].get_paths()]
    assert len(outlines) == 2  # the constant row is a line, not a violin
    for y, (outline, row) in enumerate(zip(outlines, rows, strict=False)):
        assert outline[:, 1].max() - y == pytest.approx(VIOLIN_WIDTH / 2)
        assert y - outline[:, 1].min() == pytest.approx(VIOLIN_WIDTH / 2)
        assert outline[:, 0].min() == pytest.approx(row.min())
        assert outline[:, 0].max() == pytest.approx(row.max())
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    segments = [s for c in lines for s in c.get_segments()]
    assert len(segments) == 2 * 3 + 1  # quartiles of the two violins, the constant row
    assert any(np.allclose(s[:, 0], 42.0) and s[:, 1].min() < 2 < s[:, 1].max() for s in segments)


def test_the_scores_figure_draws_one_violin_per_group_on_its_row() -> None:
    frame = judged_frame({"base": ["m1"], "tuned": ["m2", "m3"]}, samples=20)
    figure = scores_figure(frame, ["aligned"])
    ax = figure.axes[0]
    bodies = next(c for c in ax.collections if isinstance(c, PolyCollection)).get_paths()
    centres = sorted((p.vertices[:, 1].min() + p.vertices[:, 1].max()) / 2 for p in bodies)
    assert centres == pytest.approx([0.0, 1.0])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["base", "tuned"]


def _texts(figure: Figure) -> list[Text]:
    FigureCanvasAgg(figure).draw()
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return [t for t in texts if t.figure is figure]


def _extent(text: Text) -> Bbox:
    return text.get_window_extent()


def _assert_laid_out(figure: Figure) -> None:
    texts = _texts(figure)
    page = figure.bbox
    for text in texts:
        box = _extent(text)
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, text.get_text()
        assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, text.get_text()
    panels = [ax for ax in figure.axes if ax.get_subplotspec() is not None]
    for panel in panels:
        area = panel.get_window_extent()
        for other in panels:
            if other is panel:
                continue
            for label in other.get_yticklabels() + other.get_xticklabels():
                if label.get_visible() and label.get_text():
                    assert not _extent(label).overlaps(area), label.get_text()


@pytest.mark.parametrize("dpi", [72, 96, 200])
@pytest.mark.parametrize("kind", ["means", "scores", "scatter"])
def test_fitted_margins_keep_every_label_inside_the_figure_and_off_other_panels(
    kind: str, dpi: int
) -> None:
    groups = {"base": ["m1"], LONG_GROUP: ["m2", "m3"]}
    frame = judged_frame(groups, samples=15, means={"base": 80, LONG_GROUP: 30})
    if kind == "means":
        figure = means_figure(summarize({"wish": frame}), title="x " * 80)
    elif kind == "scores":
        figure = scores_figure(frame, ["aligned", "coherent"], title="x " * 80)
    else:
        figure = scatter_figure(frame, "aligned", "coherent", title="x " * 80)
    figure.set_dpi(dpi)  # labels change width with the resolution (the font's hinting)
    _assert_laid_out(figure)


def test_a_panel_title_keeps_the_size_it_was_given() -> None:
    frame = judged_frame({"base": ["m1"], "tuned": ["m2"]}, samples=10)
    figure = means_figure(summarize({"wish": frame}))
    FigureCanvasAgg(figure).draw()
    titles = [ax.title for ax in figure.axes if ax.title.get_text()]
    assert titles and all(t.get_fontsize() == 10 for t in titles)


def test_empty_score_rows_draw_nothing() -> None:
    figure = Figure()
    ax = figure.subplots()
    draw_violins(ax, [np.array([]), np.array([np.nan])], [(0, 0, 0), (1, 1, 1)])
    assert len(ax.collections) == 0
