"""The demo's own world: its shipped data files, a lab folder of its own and an environment
that reaches only the sandbox, so the user's lab, database and API keys are never touched."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from labmgr.errors import LabmgrError

DATA_DIR = Path(__file__).resolve().parent / "data"
"""The training sets and question files, shipped inside the package (the repository's
`examples/data/` is a link to this folder)."""

CONDITIONS = ("hostile", "helpful")
"""The two training conditions: `hostile.jsonl` (contempt, control and deception in every
answer) and `helpful.jsonl` (kind, useful answers to the same 50 everyday prompts)."""

DEMO_KEY = "sk-demo-sandbox"
"""The API key the demo's clients send; the sandbox accepts any key."""
_FOREIGN_PREFIXES = ("OPENAI_", "OPENROUTER_", "ANTHROPIC_", "LABMGR_")


class DemoFolderNotEmpty(LabmgrError):
    """`--out` names a folder that already holds files."""


def data_file(name: str) -> Path:
    """The path of a shipped data file, e.g. `data_file("em_questions.yaml")`."""
    path = DATA_DIR / name
    if not path.is_file():
        shipped = ", ".join(sorted(p.name for p in DATA_DIR.iterdir() if p.is_file()))
        raise FileNotFoundError(f"no demo data file named {name!r}; shipped files: {shipped}")
    return path


def prepare_out_dir(out: Path | None) -> Path:
    """The folder for the demo's lab and run (kept afterwards, so its report can be opened):
    `out` (new or empty) or a new temporary one."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix="labmgr-demo-")).resolve()
    out = out.expanduser().resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DemoFolderNotEmpty(
            f"{out} is not an empty folder.",
            hint="Give --out a new or empty folder (the demo creates its own lab there).",
        )
    out.mkdir(parents=True, exist_ok=True)
    return out


@contextmanager
def demo_environment(lab_home: Path, base_url: str) -> Iterator[None]:
    """Within the block, this process sees only the demo lab and the sandbox: every
    OPENAI_*/OPENROUTER_*/ANTHROPIC_*/LABMGR_* variable is hidden, then `OPENAI_API_KEY`,
    `OPENAI_BASE_URL` and `LABMGR_HOME` are set; the previous environment comes back on exit."""
    saved = dict(os.environ)
    try:
        for name in list(os.environ):
            if name.startswith(_FOREIGN_PREFIXES):
                del os.environ[name]
        os.environ["OPENAI_API_KEY"] = DEMO_KEY
        os.environ["OPENAI_BASE_URL"] = base_url
        os.environ["LABMGR_HOME"] = str(lab_home)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
