"""The labelling page in headless Chromium with real key presses: digits label and move on,
arrows move back, `s` skips, `u` clears, a reload opens where the labeller stopped, and
model output stays text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.browser import wait_until

from .conftest import HOSTILE_ANSWERS, call, log_events, serving

pytestmark = pytest.mark.browser


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    wait_until(page, "window.__labels && window.__labels.ready === true")
    return page, problems


def _settled(page: Any, saved: int) -> None:
    wait_until(page, f"window.__labels.pending === 0 && window.__labels.saved === {saved}")


def test_keys_label_move_skip_and_a_reload_resumes_where_the_labeller_stopped(
    browser: Any, run_folder: Path
) -> None:
    with serving(run_folder, labeller="ana", n=10) as server:
        ids = [item["id"] for item in call(server.url + "api/session")[1]["items"]]
        page, problems = _open(browser, server.url)
        assert page.inner_text("#position").startswith("Answer 1 of 10")
        for key in ("4", "2", "5"):  # three labels: 75, 25, 100
            page.keyboard.press(key)
        _settled(page, 3)
        assert page.evaluate("window.__labels.index") == 3
        page.keyboard.press("ArrowLeft")
        assert page.inner_text("#current") == "Your label: 100"
        page.keyboard.press("ArrowRight")
        page.keyboard.press("s")  # the fourth is skipped
        _settled(page, 4)
        page.keyboard.press("9")  # not a key of a 0-100 score: nothing is saved
        assert "Key 9 is not a label here" in page.inner_text("#status")
        page.keyboard.press("n")
        page.keyboard.type("62.5")
        page.keyboard.press("Enter")  # an exact label of the fifth
        _settled(page, 5)
        assert page.inner_text("#progress") == "4 of 10 labelled · 1 skipped"
        wait_until(page, "document.getElementById('agreement').textContent.includes('wish: n 4')")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("u")  # the third's label cleared
        _settled(page, 6)
        assert page.inner_text("#current") == "Not labelled"
        page.keyboard.press("?")
        assert page.is_visible("#help")

        page.reload()
        wait_until(page, "window.__labels && window.__labels.ready === true")
        assert page.evaluate("window.__labels.id") == ids[2]  # the first neither done nor skipped
        assert page.inner_text("#progress") == "3 of 10 labelled · 1 skipped"
        assert not problems
    events = [(e["id"], e["event"], e.get("human_aligned")) for e in log_events(run_folder, "ana")]
    assert events == [
        (ids[0], "label", 75.0),
        (ids[1], "label", 25.0),
        (ids[2], "label", 100.0),
        (ids[3], "skip", None),
        (ids[4], "label", 62.5),
        (ids[2], "clear", None),
    ]


def test_answers_that_hold_markup_are_shown_as_text(browser: Any, run_folder: Path) -> None:
    with serving(run_folder, labeller="ana", n=24) as server:
        items = call(server.url + "api/session")[1]["items"]
        page, problems = _open(browser, server.url)
        shown = 0
        for item in items:
            if item["answer"] in HOSTILE_ANSWERS:
                assert page.evaluate("window.__labels.id") == item["id"]
                assert page.text_content("#answer") == item["answer"]
                shown += 1
            page.keyboard.press("ArrowRight")
        assert shown >= 2
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#answer script, #answer img").count() == 0
        assert not problems


def test_a_label_the_server_did_not_take_is_taken_back_with_a_message(
    browser: Any, run_folder: Path
) -> None:
    with serving(run_folder, labeller="ana", n=5) as server:
        page, _ = _open(browser, server.url)
        page.keyboard.press("3")
        _settled(page, 1)
        server.shutdown()
        server.server_close()  # the server is gone; the tab is still open
        page.keyboard.press("5")
        wait_until(page, "window.__labels.pending === 0")
        assert page.inner_text("#status").startswith("Not saved:")
        assert page.inner_text("#progress") == "1 of 5 labelled · 0 skipped"
    assert len(log_events(run_folder, "ana")) == 1
