"""The peer the benchmarks measure against: llmcomp 1.6.0 in a virtual environment of its own,
made once (default `$XDG_CACHE_HOME/labmgr-bench/llmcomp-venv`) and shared by every script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["LLMCOMP", "default_venv", "llmcomp_python"]

LLMCOMP = "llmcomp==1.6.0"


def default_venv() -> Path:
    """Where the peer's environment lives unless `--llmcomp-venv` says otherwise."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "labmgr-bench" / "llmcomp-venv"


def llmcomp_python(venv: Path) -> Path:
    """The Python of `venv`, creating it with llmcomp installed from PyPI on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"creating {venv} and installing {LLMCOMP} from PyPI …", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", LLMCOMP], check=True)
    return python
