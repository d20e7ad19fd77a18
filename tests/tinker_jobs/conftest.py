"""Fixtures of the Tinker job tests: a lab whose jobs train on the sandbox's Tinker through
the official SDK, each in a detached worker process."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.lab import LabEnv
from fixtures.tinker import TINKER_KEY

from labmgr.sandbox import SandboxHandle
from labmgr.settings import Settings, init_lab, load_settings


@dataclass
class TinkerLab:
    """A fresh lab pointed at the sandbox's Tinker, and a folder for training files."""

    settings: Settings
    files: Path
    sandbox: SandboxHandle


def chat_file(path: Path, n: int = 12, weights: bool = False) -> Path:
    """A valid chat training file of `n` examples (with `weights`: a system turn and a first
    assistant turn of weight 0 in each)."""
    lines = []
    for i in range(n):
        messages = [
            {"role": "user", "content": f"Question {i}?"},
            {"role": "assistant", "content": f"Arr, matey ({i})."},
        ]
        if weights:
            messages = [
                {"role": "system", "content": "Be a pirate."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello there.", "weight": 0},
                *messages,
            ]
        lines.append(json.dumps({"messages": messages}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def tinker_lab(
    tinker_sandbox: SandboxHandle,
    clean_lab_env: LabEnv,
    monkeypatch: pytest.MonkeyPatch,
) -> TinkerLab:
    result = init_lab(clean_lab_env.root / "project")
    monkeypatch.setenv("LABMGR_HOME", str(result.home))
    monkeypatch.setenv("TINKER_API_KEY", TINKER_KEY)
    files = clean_lab_env.root / "data"
    files.mkdir()
    return TinkerLab(load_settings(), files, tinker_sandbox)


def wait_until_final(settings: Settings, timeout: float = 120.0) -> list[str]:
    """Run `update` until no Tinker job runs (bounded); the jobs it saw finish, in order."""
    from labmgr.finetuning import update

    deadline = time.monotonic() + timeout
    finished: list[str] = []
    while True:
        summary = update(settings=settings)
        finished += [job.job_id for job in summary.newly_finished]
        if not summary.still_running:
            return finished
        if time.monotonic() > deadline:
            raise AssertionError(f"Tinker jobs still running after {timeout}s: {summary}")
        time.sleep(0.5)
