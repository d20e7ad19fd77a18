"""Every command and Python snippet in README.md and docs/*.md runs as written, in a
brand-new shell.

A reader is modelled as a terminal session: it starts with no `labmgr` on `PATH`, no API
keys and no lab; each ```bash block runs in that terminal (variables it exports carry over
to the next blocks, programs it starts in the background keep running until the terminal
closes) and each ```python block runs with the terminal's `python`. So the pages themselves
must activate `.venv`, start the sandbox and export what the next commands need.

The README is one session, in a fresh folder; the docs pages (index, quickstart, concepts,
then the rest in name order) are a second session in another fresh folder, where later
pages may use the lab and runs earlier ones made. A fresh folder holds `examples/` and the
`.venv` that `make setup` would have created (links to this checkout and this test run's
environment). A block after `<!-- no-test -->` is not run; nor is a block of `make`
commands (the demo and the test suite, which the test suite cannot run inside itself).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.demo_env import REPO
from fixtures.docs_snippets import NO_TEST, Snippet, snippets

SESSIONS = [
    ["README.md"],
    ["docs/index.md", "docs/quickstart.md", "docs/concepts.md"],
]
"""Pages read in one terminal each; docs pages not named here join the second, by name."""

_FOREIGN = ("OPENAI_", "OPENROUTER_", "ANTHROPIC_", "LABMGR_")
_NOT_CARRIED = {"_", "SHLVL", "PWD", "OLDPWD"}


def reading_sessions() -> list[list[Path]]:
    named = [[REPO / page for page in session] for session in SESSIONS]
    listed = {page for session in named for page in session}
    rest = sorted(p for p in (REPO / "docs").glob("*.md") if p not in listed)
    named[-1].extend(rest)
    return [[page for page in session if page.is_file()] for session in named]


def _brand_new_path() -> str:
    """This machine's PATH without any folder that holds a `labmgr` (an activated venv)."""
    keep = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder and not (Path(folder) / "labmgr").exists():
            keep.append(folder)
    return os.pathsep.join(keep)


class ReaderTerminal:
    """One terminal of a reader following the pages, in `work` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.work = root / "project"
        self.work.mkdir(parents=True)
        (self.work / "examples").symlink_to(REPO / "examples")
        (self.work / ".venv").symlink_to(Path(sys.prefix))
        home = root / "home"
        (root / "tmp").mkdir()
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
        for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
            env.pop(name, None)
        env.update(
            PATH=_brand_new_path(),
            HOME=str(home),
            XDG_DATA_HOME=str(home / ".local" / "share"),
            TMPDIR=str(root / "tmp"),
            NO_PROXY="127.0.0.1,localhost",
            no_proxy="127.0.0.1,localhost",
            MPLBACKEND="Agg",
            COLUMNS="120",
        )
        self.env = env
        self._exported = root / "exported.env"
        self._groups: list[int] = []

    def run(self, snippet: Snippet) -> subprocess.CompletedProcess[str]:
        if snippet.language == "bash":
            # Save what the block exported (on any exit), for the blocks after it.
            keep = f"trap 'env -0 > \"{self._exported}\"' EXIT\n"
            command = ["bash", "-euo", "pipefail", "-c", keep + snippet.code]
        else:
            command = ["python", "-c", snippet.code]
        self._exported.unlink(missing_ok=True)
        process = subprocess.Popen(
            command,
            cwd=self.work,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its background programs share this group: see close()
        )
        self._groups.append(process.pid)
        stdout, stderr = process.communicate(timeout=300)
        if snippet.language == "bash" and self._exported.exists():
            self._carry_over(self._exported.read_bytes())
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)

    def _carry_over(self, exported: bytes) -> None:
        env = {}
        for item in exported.decode().split("\0"):
            name, sep, value = item.partition("=")
            if sep and name not in _NOT_CARRIED:
                env[name] = value
        self.env = env

    def close(self) -> None:
        """Stop what the blocks left running (the sandbox), as closing a terminal does."""
        for group in self._groups:
            try:
                os.killpg(group, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                continue


def test_a_brand_new_shell_has_no_labmgr(tmp_path: Path) -> None:
    terminal = ReaderTerminal(tmp_path)
    assert shutil.which("labmgr", path=terminal.env["PATH"]) is None
    assert not any(name.startswith(_FOREIGN) for name in terminal.env)
    activation = Snippet(REPO / "README.md", 0, "bash", "source .venv/bin/activate\n", False)
    try:
        result = terminal.run(activation)
    finally:
        terminal.close()
    assert result.returncode == 0, result.stderr
    found = shutil.which("labmgr", path=terminal.env["PATH"])
    assert found is not None and Path(found).parent == Path(sys.prefix) / "bin"


@pytest.mark.slow
@pytest.mark.parametrize("session", range(len(SESSIONS)), ids=["readme", "docs"])
def test_every_snippet_runs_in_reading_order(tmp_path: Path, session: int) -> None:
    """Each session in a terminal of its own (the sessions share nothing, so they run in
    parallel)."""
    ran = 0
    terminal = ReaderTerminal(tmp_path)
    try:
        for page in reading_sessions()[session]:
            for snippet in snippets(page):
                if snippet.skipped or snippet.only_make:
                    continue
                clock = time.monotonic()
                result = terminal.run(snippet)
                print(f"{snippet.where}: {time.monotonic() - clock:.1f} s")
                assert result.returncode == 0, (
                    f"{snippet.where} ({snippet.language}) failed with exit "
                    f"{result.returncode}\n--- code\n{snippet.code}--- stdout\n"
                    f"{result.stdout[-3000:]}--- stderr\n{result.stderr[-3000:]}"
                )
                ran += 1
    finally:
        terminal.close()
    assert ran >= (3 if session == 0 else 20), f"only {ran} snippets ran; did the fences change?"


def test_pages_mark_as_untested_only_what_cannot_run_here() -> None:
    """README and the quickstart run every block; a marked block elsewhere is a benchmark
    (minutes of measurement, or the network for llmcomp's environment)."""
    for session in reading_sessions():
        for page in session:
            for snippet in snippets(page):
                if not snippet.skipped:
                    continue
                assert page.name == "benchmarks.md", f"{snippet.where} is marked {NO_TEST}"
                assert "benchmarks/" in snippet.code, snippet.where


def test_no_test_marker_skips_only_the_next_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        f"Text\n\n{NO_TEST}\n```bash\nexit 1\n```\n\n```bash\necho ok\n```\n"
        "```python\nprint(1)\n```\n```text\nnot code\n```\n",
        encoding="utf-8",
    )
    found = snippets(page)
    assert [(s.language, s.skipped) for s in found] == [
        ("bash", True),
        ("bash", False),
        ("python", False),
    ]
    assert found[1].code == "echo ok\n"


def test_every_page_has_been_read_and_links_resolve() -> None:
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    for page in (REPO / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"({page.name})" in index, f"docs/index.md does not link {page.name}"
    for design in (REPO / "docs" / "design").glob("*.md"):
        assert f"(design/{design.name})" in index, f"docs/index.md does not link {design}"
