"""docs/cli.md is generated from the typer app and must match it."""

from __future__ import annotations

import subprocess
import sys

from fixtures.demo_env import REPO

from tools.cli_reference import REGENERATE, render_reference


def test_cli_reference_matches_the_commands() -> None:
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == render_reference(), (
        f"docs/cli.md is out of date; regenerate it with: {REGENERATE}"
    )


def test_reference_lists_every_command_with_its_options() -> None:
    text = render_reference()
    for heading in ("## `labmgr`", "### `labmgr finetune`", "#### `labmgr finetune validate`"):
        assert heading in text
    assert "| `--min-examples <n>` |" in text


def test_check_mode_fails_on_a_stale_page_and_names_the_fix(tmp_path) -> None:
    stale = tmp_path / "cli.md"
    stale.write_text("# old\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "tools.cli_reference", "--check", str(stale)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert REGENERATE in result.stderr
