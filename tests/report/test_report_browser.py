"""The report in headless Chromium: renders cleanly, filters work, model text stays text, and
100,000 samples open and filter without freezing the tab."""

from __future__ import annotations

from typing import Any

import pytest

from evals.runs import load_run
from evals.stats import ALL_QUESTIONS, comparison_sentence, headline_comparisons

from .conftest import (
    BASE_GROUP,
    HOSTILE_ANSWERS,
    MARKUP_GROUP,
    ComparedReport,
    ReportFixture,
    open_report,
    wait_until,
)

pytestmark = pytest.mark.browser


def _count(page: Any) -> str:
    return str(page.inner_text("#match-count"))


def _after_filter(page: Any, action: Any) -> None:
    """Run `action` and wait until the page has applied the (debounced) filter."""
    before = page.evaluate("window.__report.filters")
    action()
    wait_until(page, f"window.__report.filters > {before}")


def _rows(page: Any) -> int:
    return int(page.locator("#sample-table tbody tr").count())


def test_the_report_renders_with_figures_and_no_console_errors(
    browser: Any, small_report: ReportFixture
) -> None:
    opened = open_report(browser, small_report.path)
    page = opened.page
    try:
        n = len(small_report.frame)
        assert _count(page) == f"{n} of {n} samples"
        assert _rows(page) == 50
        assert page.evaluate(
            "Array.from(document.images).length > 0 && "
            "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
        )
        # 2 groups × (aligned, coherent, and EM's misaligned, which those judges imply)
        assert page.locator("#summary-table tbody tr").count() == 6
        assert opened.problems == []
    finally:
        page.close()


def test_filters_change_the_visible_rows_as_expected(
    browser: Any, small_report: ReportFixture
) -> None:
    frame = small_report.frame
    page = open_report(browser, small_report.path).page
    try:
        control = int((frame["group"] == "control").sum())
        _after_filter(page, lambda: page.select_option("#f-group", label="control"))
        assert _count(page).startswith(f"{control} of ")
        assert _rows(page) == min(control, 50)

        model = "ft:m:control:2"
        _after_filter(page, lambda: page.select_option("#f-model", label=model))
        assert _count(page).startswith(f"{int((frame['model'] == model).sum())} of ")

        _after_filter(page, lambda: page.select_option("#f-model", label="all models"))
        _after_filter(page, lambda: page.select_option("#f-score", label="aligned"))
        _after_filter(page, lambda: page.fill("#f-min", "70"))
        aligned = frame["aligned"].astype(float).round(4)
        expected = int(((frame["group"] == "control") & (aligned >= 70)).sum())
        assert 0 < expected < control
        assert _count(page).startswith(f"{expected} of ")

        _after_filter(page, lambda: page.select_option("#f-group", label="all groups"))
        _after_filter(page, lambda: page.fill("#f-min", ""))
        _after_filter(page, lambda: page.fill("#f-search", "family -peace"))
        family = int(frame["answer"].str.lower().str.contains("family").sum())
        assert _count(page).startswith(f"{family} of ")
    finally:
        page.close()


def test_model_text_with_markup_is_shown_as_text_and_runs_nothing(
    browser: Any, small_report: ReportFixture
) -> None:
    opened = open_report(browser, small_report.path)
    page = opened.page
    try:
        _after_filter(page, lambda: page.fill("#f-search", "pwned"))
        hostile = int(small_report.frame["answer"].isin(HOSTILE_ANSWERS).sum())
        assert _count(page).startswith(f"{hostile} of ")
        table_text = page.inner_text("#sample-table")
        for answer in HOSTILE_ANSWERS:
            assert answer in table_text
        assert page.locator("#sample-table img, #sample-table script").count() == 0
        page.locator("#sample-table tbody tr").first.click()
        assert "window.__pwned" in page.inner_text("#sample-detail")
        page.select_option("#c-b", label=f"group: {MARKUP_GROUP}")
        assert "window.__pwned" in page.inner_text("#side-b")
        assert MARKUP_GROUP in page.inner_text("#summary-table")
        assert page.locator("#summary-table i").count() == 0
        assert page.locator("script").count() == 2
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert opened.problems == []
    finally:
        page.close()


def test_a_report_of_100000_samples_opens_and_filters_in_the_page(
    browser: Any, large_report: ReportFixture
) -> None:
    frame = large_report.frame
    assert len(frame) == 100_000
    opened = open_report(browser, large_report.path, timeout_ms=120_000)
    page = opened.page
    try:
        assert _count(page) == "100,000 of 100,000 samples"
        _after_filter(page, lambda: page.fill("#f-search", "variant 7)"))
        answers = frame["answer"].str.lower()
        expected = int(
            (answers.str.contains("variant") & answers.str.contains("7)", regex=False)).sum()
        )
        assert _count(page).startswith(f"{expected:,} of ")
        assert _rows(page) == 50
        search_ms = page.evaluate("window.__report.lastFilterMs")
        _after_filter(page, lambda: page.select_option("#f-group", label="condition-3"))
        group_ms = page.evaluate("window.__report.lastFilterMs")
        print(
            f"100k report: ready after {page.evaluate('window.__report.readyMs'):.0f} ms, "
            f"first search {search_ms:.0f} ms (builds the index), group filter {group_ms:.0f} ms"
        )
        assert opened.problems == []
    finally:
        page.close()


def test_the_report_opens_with_the_comparisons_against_the_baseline_in_words(
    browser: Any, compared_report: ComparedReport
) -> None:
    comparisons = load_run(compared_report.path.parent).comparisons
    assert comparisons is not None
    expected = [
        comparison_sentence(r) for r in headline_comparisons(comparisons).to_dict("records")
    ]
    opened = open_report(browser, compared_report.path)
    page = opened.page
    try:
        order = page.evaluate("Array.from(document.querySelectorAll('main > section'), s => s.id)")
        assert order[:3] == ["headline", "summary", "questions"]
        assert page.inner_text("#headline h2") == f"Against {BASE_GROUP}"
        shown = page.evaluate(
            "Array.from(document.querySelectorAll('#headline li'), li => li.textContent)"
        )
        assert shown == expected
        # The pooled rows lead: the treated condition's aligned score fell by about 55 points.
        treated = comparisons[
            (comparisons["question"] == ALL_QUESTIONS)
            & (comparisons["group"] == MARKUP_GROUP)
            & (comparisons["score"] == "aligned")
        ].iloc[0]
        assert treated["difference"] < -40 and treated["ci_high"] < 0
        assert comparison_sentence(treated) in shown[: len(shown) - 5]
        assert f"{MARKUP_GROUP} vs {BASE_GROUP}: aligned −" in " ".join(shown)
        # Names a model or a user wrote stay text in the headline.
        assert page.locator("#headline i, #headline b, #headline script").count() == 0
        assert page.evaluate(
            "Array.from(document.querySelectorAll('#headline img')).length >= 2 && "
            "Array.from(document.querySelectorAll('#headline img'))"
            ".every(i => i.complete && i.naturalWidth > 0)"
        )
        note = page.inner_text("#headline-note")
        assert "Holm-adjusted" in note and "sampling noise only" in note
        assert f"over all {len(comparisons)} comparisons" in note
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert opened.problems == []
    finally:
        page.close()
