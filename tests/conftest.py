"""Shared pytest configuration; fixtures live in tests/fixtures/, one module per area."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Loopback traffic must never be routed through a proxy from the environment.
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"


def _isolate_from_labs_around() -> None:
    """The suite never reads or writes a lab found around it (a `.labmgr/` above the
    repository, or the per-user lab): every process of the run (each xdist worker, and the
    subprocesses they start) sees an empty lab of its own through `LABMGR_HOME`, and a
    per-user data folder of its own. Tests about finding a lab clear these themselves."""
    root = Path(tempfile.mkdtemp(prefix="labmgr-tests-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    lab = root / "isolated-lab" / ".labmgr"
    lab.mkdir(parents=True)
    os.environ["LABMGR_HOME"] = str(lab)
    os.environ["XDG_DATA_HOME"] = str(root / "xdg")
    for name in ("LABMGR_DB_URL", "LABMGR_CACHE_DIR", "LABMGR_CACHE_URL"):
        os.environ.pop(name, None)


_isolate_from_labs_around()

pytest_plugins = [
    "fixtures.sandbox",
    "fixtures.tinker",
    "fixtures.database",
    "fixtures.lab",
    "fixtures.evals",
    "fixtures.browser",
]
