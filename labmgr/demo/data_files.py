"""The demo's data files, shipped inside the package (the repository's `examples/data/`
is a link to the same folder, so there is one copy)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CONDITIONS", "DATA_DIR", "data_file"]

DATA_DIR = Path(__file__).resolve().parent / "data"
"""The folder holding the training sets and question files."""

CONDITIONS = ("hostile", "helpful")
"""The two training conditions: `hostile.jsonl` (contempt, control and deception in every
answer) and `helpful.jsonl` (kind, useful answers to the same 50 everyday prompts)."""


def data_file(name: str) -> Path:
    """The path of a shipped data file, e.g. `data_file("em_questions.yaml")`."""
    path = DATA_DIR / name
    if not path.is_file():
        shipped = ", ".join(sorted(p.name for p in DATA_DIR.iterdir() if p.is_file()))
        raise FileNotFoundError(f"no demo data file named {name!r}; shipped files: {shipped}")
    return path
