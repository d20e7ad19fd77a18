"""Every command and Python snippet in README.md and docs/*.md runs as written.

The pages are read in order (README, quickstart, concepts, the rest) in one fresh folder,
as a new user would follow them: later pages may use the lab and runs earlier ones made.
The endpoint is a sandbox (`OPENAI_BASE_URL`), `labmgr` and `python` are on PATH, and
`examples/` is reachable from the folder. A block after `<!-- no-test -->` is not run.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from fixtures.demo_env import REPO, user_env
from fixtures.docs_snippets import NO_TEST, snippets

from labmgr.sandbox import run_sandbox

_FIRST = ["README.md", "docs/index.md", "docs/quickstart.md", "docs/concepts.md"]


def reading_order() -> list[Path]:
    pages = [REPO / name for name in _FIRST]
    rest = sorted(p for p in (REPO / "docs").glob("*.md") if p not in pages)
    return [p for p in pages + rest if p.is_file()]


def _run(snippet, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if snippet.language == "bash":
        command = ["bash", "-euo", "pipefail", "-c", snippet.code]
    else:
        command = ["python", "-c", snippet.code]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_every_snippet_runs_in_reading_order(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "examples").symlink_to(REPO / "examples")
    ran = 0
    with run_sandbox(job_seconds=0.5) as sandbox:
        env = user_env(tmp_path, sandbox.base_url)
        for page in reading_order():
            for snippet in snippets(page):
                if snippet.skipped or snippet.only_make:
                    continue
                clock = time.monotonic()
                result = _run(snippet, work, env)
                print(f"{snippet.where}: {time.monotonic() - clock:.1f} s")
                assert result.returncode == 0, (
                    f"{snippet.where} ({snippet.language}) failed with exit {result.returncode}"
                    f"\n--- code\n{snippet.code}--- stdout\n{result.stdout[-3000:]}"
                    f"--- stderr\n{result.stderr[-3000:]}"
                )
                ran += 1
    assert ran >= 10, f"only {ran} snippets ran; did the fences change?"


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
