"""The command line starts, explains itself, and reports its version."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import labmgr.cli
from labmgr import __version__
from labmgr.cli import app

runner = CliRunner()


def test_help_lists_command_groups() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "sandbox" in result.output


def test_version_flag_prints_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_python_dash_m_runs_the_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "labmgr", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("labmgr ")


def test_no_command_module_imports_the_cli_package_face() -> None:
    """`labmgr.cli` re-exports `labmgr.cli.app`; a command module (or the app) importing
    `labmgr.cli` back, even inside a function, would close an import cycle."""
    package = Path(labmgr.cli.__file__).parent
    offenders = []
    for module in sorted(package.glob("*.py")):
        if module.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "labmgr.cli":
                offenders.append(f"{module.name}:{node.lineno}")
            if isinstance(node, ast.Import) and any(a.name == "labmgr.cli" for a in node.names):
                offenders.append(f"{module.name}:{node.lineno}")
    assert offenders == []
