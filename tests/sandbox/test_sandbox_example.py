"""The sandbox example script runs end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "sandbox_smoke.py"


def test_smoke_example_lists_models_and_answers() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("sandbox listening at http://127.0.0.1:")
    assert "models, e.g. gpt-4o-mini" in lines[1]
    assert "'chat.completions': 1" in lines[-1]
