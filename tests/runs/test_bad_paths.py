"""Paths a user gets wrong end in one sentence naming the path, exit 1, no traceback, and
nothing bought: a run folder or report path that is a file or lies under one, a damaged
cache file, a read-only cache or lab folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.evals import TEST_KEY
from fixtures.report import judged_frame
from typer.testing import CliRunner

from evals import Cache, CacheError, OutputError
from evals.report import write_report
from evals.runs import write_run
from labmgr.cli import app
from labmgr.settings import Settings, init_lab, load_settings

from .conftest import chat_requests

runner = CliRunner()
NOBODY = 65534


def _fails_clearly(result: Any, *needles: str) -> str:
    flat = " ".join(result.output.split())
    assert result.exit_code == 1, result.output
    assert flat.startswith("Error: ") and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in flat, result.output
    return flat


def _eval_run(questions_file: Path, *extra: str) -> Any:
    args = ["eval", "run", str(questions_file), "--group", "b=gpt-4o-mini", "--question", "cats"]
    return runner.invoke(app, [*args, *extra])


def test_an_out_folder_that_is_a_file_or_under_one_is_refused_before_buying(
    lab: Settings, sandbox: Any, questions_file: Path, tmp_path: Path
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    _fails_clearly(_eval_run(questions_file, "--out", str(a_file)), str(a_file), "is a file")
    under = a_file / "run"
    _fails_clearly(_eval_run(questions_file, "--out", str(under)), str(under), "is a file")
    assert chat_requests(sandbox) == 0 and a_file.read_text() == "keep me"


def test_a_report_path_that_is_a_folder_or_under_a_file_is_refused(tmp_path: Path) -> None:
    frame = judged_frame({"g": ["m-1", "m-2"]}, samples=4)
    run = write_run(tmp_path / "run", {"wish": frame}, resamples=50)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    under = a_file / "report.html"
    result = runner.invoke(app, ["report", str(run.path), "--out", str(under), "--no-figures"])
    _fails_clearly(result, str(under), "is a file")
    result = runner.invoke(app, ["report", str(run.path), "--out", str(tmp_path), "--no-figures"])
    _fails_clearly(result, str(tmp_path), "it is a folder")
    with pytest.raises(OutputError, match="is a file"):
        write_report(run, under, figures=False)
    assert a_file.read_text() == "keep me"


def test_a_figure_file_name_taken_by_a_folder_is_one_sentence_naming_it(tmp_path: Path) -> None:
    from evals.report import run_plans

    run = write_run(tmp_path / "run", {"wish": judged_frame({"g": ["m-1", "m-2"]})}, resamples=50)
    first = run_plans(run)[0].name
    in_the_way = tmp_path / "figures" / f"{first}.png"
    in_the_way.mkdir(parents=True)
    args = ["report", str(run.path), "--figures", str(tmp_path / "figures"), "--format", "png"]
    result = runner.invoke(app, [*args, "--no-figures"])
    _fails_clearly(result, f"cannot write the figure {in_the_way}", "it is a folder")


def test_a_damaged_cache_file_is_called_damaged_and_nothing_is_bought(
    lab: Settings, sandbox: Any, questions_file: Path
) -> None:
    lab.cache_dir.mkdir(parents=True, exist_ok=True)
    damaged = lab.cache_dir / "responses.sqlite"
    damaged.write_bytes(b"this is not a database, it was overwritten by mistake\n" * 200)
    flat = _fails_clearly(runner.invoke(app, ["cache", "info"]), str(damaged), "is damaged")
    assert "Move the file away" in flat
    _fails_clearly(_eval_run(questions_file), str(damaged), "is damaged")
    assert chat_requests(sandbox) == 0


def test_a_damaged_cache_file_raises_a_cache_error_in_python(tmp_path: Path) -> None:
    (tmp_path / "responses.sqlite").write_bytes(b"\x00garbage" * 512)
    with pytest.raises(CacheError, match="is damaged"):
        Cache(tmp_path).info()


# ---- read-only folders: a person without write permission, even when the suite is root --


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder an unprivileged user can read (pytest's own temporary folders are private)."""
    folder = Path(tempfile.mkdtemp(prefix="labmgr-readonly-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def _as_a_user(
    args: list[str], env: dict[str, str], cwd: Path, module: str | None = "labmgr"
) -> subprocess.CompletedProcess[str]:
    """`python -m labmgr ARGS` (or `python ARGS`) as a user without write permission on
    root's read-only folders."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: no way to be a user without rights")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*prefix, sys.executable, *(["-m", module] if module else []), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _user_env(lab_home: Path, sandbox: Any, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LABMGR_"))}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "xdg"),
        LABMGR_HOME=str(lab_home),
        OPENAI_API_KEY=TEST_KEY,
        OPENAI_BASE_URL=sandbox.base_url,
        COLUMNS="200",
    )
    return env


@pytest.mark.parametrize("read_only", ["cache", "lab"])
def test_a_read_only_folder_ends_the_run_in_one_sentence_before_buying(
    sandbox: Any, shared_dir: Path, read_only: str
) -> None:
    sandbox.reset()
    home = init_lab(shared_dir / "project").home
    settings = load_settings(home)
    questions = shared_dir / "questions.yaml"
    questions.write_text(
        "- name: cats\n  type: rating\n  paraphrases: ['Cats, 0 to 100? A number.']\n"
    )
    user_home = shared_dir / "home"
    user_home.mkdir()
    user_home.chmod(0o777)
    if read_only == "cache":  # the run folder could be written, the cache cannot
        settings.runs_dir.chmod(0o777)
        settings.cache_dir.chmod(0o555)
    else:  # the whole lab: its cache and runs folders are not there yet and cannot be made
        settings.cache_dir.rmdir()
        settings.runs_dir.rmdir()
        home.chmod(0o555)
    done = _as_a_user(
        ["eval", "run", str(questions), "--group", "b=gpt-4o-mini"],
        _user_env(home, sandbox, user_home),
        cwd=shared_dir,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("Error: ") and "Traceback" not in done.stderr, done.stderr
    message = done.stderr.splitlines()[0]
    assert str(home) in message and "permission denied" in message, message
    assert chat_requests(sandbox) == 0


_READ_ONLY_IN_PYTHON = """
import sys
from evals import Cache, CacheError, EnvRouter, Question, RunSettings
question = Question.create(type="free_form", name="ro", paraphrases=["Hi."], max_tokens=5)
try:
    question.df(
        {"b": ["gpt-4o-mini"]},
        cache=Cache(sys.argv[1]),
        router=EnvRouter(base_url=sys.argv[2]),
        settings=RunSettings(progress=False),
    )
except CacheError as error:
    print("CacheError:", error.message)
"""


def test_a_read_only_cache_raises_a_cache_error_before_anything_is_bought_in_python(
    sandbox: Any, shared_dir: Path
) -> None:
    sandbox.reset()
    folder = shared_dir / "cache"
    folder.mkdir(mode=0o555)
    home = shared_dir / "home"
    home.mkdir(mode=0o777)
    done = _as_a_user(
        ["-c", _READ_ONLY_IN_PYTHON, str(folder), sandbox.base_url],
        _user_env(shared_dir / "no-lab", sandbox, home),
        cwd=shared_dir,
        module=None,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CacheError: cannot open the response cache"), done.stdout
    assert f"permission denied on its folder {folder}" in done.stdout
    assert chat_requests(sandbox) == 0


def test_a_damaged_samples_file_is_named_when_the_report_is_written(tmp_path: Path) -> None:
    frame = judged_frame({"g": ["m-1", "m-2"]}, samples=4)
    run = write_run(tmp_path / "run", {"wish": frame}, resamples=50)
    samples = run.path / run.question_info("wish")["samples_file"]
    samples.write_bytes(b"PAR1 not really parquet")
    result = runner.invoke(app, ["report", str(run.path), "--no-figures"])
    _fails_clearly(result, str(samples), "cannot be read")
