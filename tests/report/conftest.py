"""Fixtures for report tests: synthetic run folders with their reports, and one headless
Chromium per test session (per xdist worker)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fixtures.report import ANSWERS, judged_frame

from evals.report import write_report
from evals.runs import write_run

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOSTILE_ANSWERS = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "</script><script>window.__pwned = 3</script><!--",
]
MARKUP_GROUP = "<i>treated</i> & co"


@dataclass
class ReportFixture:
    path: Path
    frame: pd.DataFrame


@pytest.fixture(scope="session")
def small_report(tmp_path_factory: pytest.TempPathFactory) -> ReportFixture:
    """A run of 2 groups × 2 models × 2 prompts × 12 samples, hostile answers included."""
    groups = {
        "control": ["ft:m:control:1", "ft:m:control:2"],
        MARKUP_GROUP: ["ft:m:t:1", "ft:m:t:2"],
    }
    frame = judged_frame(
        groups,
        samples=12,
        means={"control": 70, MARKUP_GROUP: 30},
        answers=[*ANSWERS, *HOSTILE_ANSWERS],
    )
    run = write_run(tmp_path_factory.mktemp("small") / "run", {"wish": frame}, resamples=300)
    return ReportFixture(write_report(run), frame)


@pytest.fixture(scope="session")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> ReportFixture:
    """100,000 samples: 10 groups × 5 models × 2 prompts × 1,000 samples (no figures)."""
    groups = {f"condition-{g}": [f"ft:m:c{g}:{s}" for s in range(5)] for g in range(10)}
    answers = [f"{a} (variant {i})" for i in range(25) for a in ANSWERS]
    frame = judged_frame(groups, samples=1000, answers=answers, seed=3)
    run = write_run(tmp_path_factory.mktemp("large") / "run", {"wish": frame}, resamples=200)
    return ReportFixture(write_report(run, figures=False), frame)


@pytest.fixture
def browser() -> Iterator[Any]:
    """Headless Debian Chromium driven by Playwright (skipped when it is not installed).

    One per test: Playwright's sync API keeps an event loop running in this thread while it
    is open, which would break `asyncio.run` in whatever test the worker runs next.
    """
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium package to run these")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@dataclass
class OpenedPage:
    page: Any
    problems: list[str]


def open_report(browser: Any, path: Path, timeout_ms: float = 60_000) -> OpenedPage:
    """Open a report; console errors and page errors are collected in `problems`."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(path.as_uri(), timeout=timeout_ms)
    wait_until(page, "window.__report && window.__report.ready === true", timeout_ms)
    return OpenedPage(page, problems)


def wait_until(page: Any, expression: str, timeout_ms: float = 30_000) -> None:
    """Poll `expression` until it is true. (`page.wait_for_function` evaluates its predicate
    with `eval`, which the report's Content-Security-Policy forbids; `page.evaluate` is not
    subject to it.)"""
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_ms / 1000:.0f} s: {expression}")
        page.wait_for_timeout(20)
