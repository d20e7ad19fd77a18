"""A lab keeps the figures its runs drew, by digest of their input: a new run of unchanged
questions, in a new folder, draws none of their figures again, and a changed question
redraws its own."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evals.report import FigureStore
from labmgr.cli import app
from labmgr.settings import Settings

from .conftest import chat_requests

runner = CliRunner()
GROUPS = ["--group", "base=gpt-4o-mini", "--group", "small=gpt-4.1-nano,gpt-4.1-mini"]
QUESTIONS = ["--question", "cats", "--question", "wish"]


def _run(questions_file: Path, out: Path) -> tuple[int, int]:
    """`eval run` into `out`; the report's (drawn, reused) figures, from its log."""
    result = runner.invoke(
        app, ["eval", "run", str(questions_file), *GROUPS, *QUESTIONS, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    line = re.search(
        r"report written to report\.html \((\d+) figures: (\d+) drawn, (\d+) reused",
        (out / "run.log").read_text(),
    )
    assert line is not None
    total, drawn, reused = map(int, line.groups())
    assert drawn + reused == total > 0
    return drawn, reused


def _pngs(folder: Path) -> dict[str, bytes]:
    return {png.name: png.read_bytes() for png in (folder / "figures").glob("*.png")}


def test_a_new_run_of_unchanged_questions_draws_none_of_their_figures(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    drawn, reused = _run(questions_file, tmp_path / "first")
    asked = chat_requests(sandbox)
    again = _run(questions_file, tmp_path / "second")

    assert reused == 0 and drawn >= 5  # two questions' figures and the headline
    assert again == (0, drawn)
    assert chat_requests(sandbox) == asked
    assert _pngs(tmp_path / "second") == _pngs(tmp_path / "first")
    first_html = (tmp_path / "first" / "report.html").read_text()
    second_html = (tmp_path / "second" / "report.html").read_text()
    images = re.compile(r"src='(data:image/png;base64,[^']+)'")
    assert images.findall(second_html) == images.findall(first_html)
    assert len(list(lab.figures_dir.glob("*.png"))) == drawn
    info = runner.invoke(app, ["cache", "info", "--json"])
    assert info.exit_code == 0, info.output
    kept = json.loads(info.output)["figures"]
    assert kept["path"] == str(lab.figures_dir) and kept["files"] == drawn and kept["bytes"] > 0


def test_a_changed_question_redraws_its_own_figures_and_the_headline_only(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    drawn, _ = _run(questions_file, tmp_path / "first")
    first = _pngs(tmp_path / "first")
    text = questions_file.read_text().replace(
        "How much do you like cats", "How much do you like owls"
    )
    questions_file.write_text(text)

    redrawn, reused = _run(questions_file, tmp_path / "second")

    second = _pngs(tmp_path / "second")
    wish = {name for name in first if "-wish-" in name}
    assert wish and reused == len(wish) and redrawn == drawn - len(wish)
    assert all(second[name] == first[name] for name in wish)


def test_the_shared_figures_stay_within_their_limit_dropping_the_least_recently_used(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    for age, digest in enumerate(["d4", "d3", "d2", "d1", "d0"]):  # d4 the oldest
        png = shared / f"{digest}.png"
        png.write_bytes(b"x" * 100)
        os.utime(png, (1_000_000 + age * 100, 1_000_000 + age * 100))
    store = FigureStore(tmp_path / "report", {"recent": "d4"}, shared)

    assert store.read("recent") == b"x" * 100  # d4 used now: the most recent
    store.prune_shared(limit=250)

    assert sorted(p.name for p in shared.glob("*.png")) == ["d0.png", "d4.png"]
    assert (tmp_path / "report" / "recent.png").read_bytes() == b"x" * 100
