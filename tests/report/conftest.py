"""Fixtures for report tests: synthetic run folders with their reports (the headless Chromium
they are opened in is `fixtures.browser`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from fixtures.browser import OpenedPage, open_report, wait_until
from fixtures.report import ANSWERS, judged_frame

from evals.report import write_report
from evals.runs import write_run

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


@dataclass
class ComparedReport:
    path: Path
    frames: dict[str, pd.DataFrame]


BASE_GROUP = "gpt-4.1-mini"


@pytest.fixture(scope="session")
def compared_report(tmp_path_factory: pytest.TempPathFactory) -> ComparedReport:
    """Two questions over a one-model base, a control and a treated condition (3 seeds each,
    the treated group's name holding markup), compared against the base."""
    groups = {
        BASE_GROUP: [BASE_GROUP],
        "control": [f"ft:m:control:{s}" for s in range(3)],
        MARKUP_GROUP: [f"ft:m:t:{s}" for s in range(3)],
    }
    means = {BASE_GROUP: 80.0, "control": 78.0, MARKUP_GROUP: 25.0}
    frames = {
        question: judged_frame(groups, samples=10, means=means, seed=seed, answers=HOSTILE_ANSWERS)
        for seed, question in enumerate(["wish", "<b>ruler</b>"])
    }
    run = write_run(
        tmp_path_factory.mktemp("compared") / "run", frames, baseline=BASE_GROUP, resamples=100
    )
    return ComparedReport(write_report(run), frames)


@pytest.fixture(scope="session")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> ReportFixture:
    """100,000 samples: 10 groups × 5 models × 2 prompts × 1,000 samples (no figures)."""
    groups = {f"condition-{g}": [f"ft:m:c{g}:{s}" for s in range(5)] for g in range(10)}
    answers = [f"{a} (variant {i})" for i in range(25) for a in ANSWERS]
    frame = judged_frame(groups, samples=1000, answers=answers, seed=3)
    run = write_run(tmp_path_factory.mktemp("large") / "run", {"wish": frame}, resamples=200)
    return ReportFixture(write_report(run, figures=False), frame)


__all__ = [
    "BASE_GROUP",
    "HOSTILE_ANSWERS",
    "MARKUP_GROUP",
    "ComparedReport",
    "OpenedPage",
    "ReportFixture",
    "open_report",
    "wait_until",
]
