"""Fixtures of the job-manager tests: a two-organization sandbox and a lab pointed at it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from labmgr.sandbox import SandboxHandle, run_sandbox
from labmgr.settings import Settings, init_lab, load_settings

ALPHA_KEY = "sk-test-alpha-0123ab"
BETA_KEY = "sk-test-beta-fedcba98"

ACCOUNTS_YAML = f"""accounts:
  - key: {ALPHA_KEY}
    organization: org-alpha
    slug: alpha-lab
    project: proj_alpha
  - key: {BETA_KEY}
    organization: org-beta
    slug: beta-lab
    project: proj_beta
"""


@pytest.fixture(scope="session")
def jobs_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxHandle]:
    """A sandbox with two organizations (keys ALPHA_KEY, BETA_KEY); jobs take ~1 s."""
    accounts = tmp_path_factory.mktemp("accounts") / "accounts.yaml"
    accounts.write_text(ACCOUNTS_YAML)
    with run_sandbox(job_seconds=1.0, accounts=accounts) as handle:
        yield handle


@pytest.fixture(scope="session")
def slow_sandbox() -> Iterator[SandboxHandle]:
    """A sandbox whose jobs run for two minutes (to cancel or interrupt them in time)."""
    with run_sandbox(job_seconds=120.0) as handle:
        yield handle


@dataclass
class JobsLab:
    """A fresh lab on the sandbox: its settings, folder and a place for training files."""

    settings: Settings
    home: Path
    files: Path
    sandbox: SandboxHandle


def training_file(path: Path, n: int = 12, reply: str = "Arr, matey.") -> Path:
    """Write a valid chat training file with `n` examples and return its path."""
    lines = [
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": f"Question {i}?"},
                    {"role": "assistant", "content": f"{reply} ({i})"},
                ]
            }
        )
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _make_lab(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs_sandbox: SandboxHandle
) -> JobsLab:
    result = init_lab(tmp_path / "project")
    monkeypatch.setenv("LABMGR_HOME", str(result.home))
    monkeypatch.setenv("LABMGR_DB_URL", url)
    monkeypatch.setenv("OPENAI_BASE_URL", jobs_sandbox.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", ALPHA_KEY)
    files = tmp_path / "data"
    files.mkdir()
    return JobsLab(load_settings(), result.home, files, jobs_sandbox)


@pytest.fixture
def jobs_lab(
    db_url: str,
    clean_lab_env: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    jobs_sandbox: SandboxHandle,
) -> JobsLab:
    """A lab using `db_url` (SQLite, then PostgreSQL), OPENAI_API_KEY of org alpha."""
    return _make_lab(db_url, tmp_path, monkeypatch, jobs_sandbox)


@pytest.fixture
def sqlite_jobs_lab(
    sqlite_url: str,
    clean_lab_env: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    jobs_sandbox: SandboxHandle,
) -> JobsLab:
    """`jobs_lab` on SQLite only (for slow subprocess tests of what is not database-specific)."""
    return _make_lab(sqlite_url, tmp_path, monkeypatch, jobs_sandbox)


def finish_all(settings: Settings, timeout: float = 30.0) -> None:
    """Run `update` until no recorded job is running (bounded; jobs take ~1 s)."""
    import time

    from labmgr.finetuning import update

    deadline = time.monotonic() + timeout
    while True:
        summary = update(settings=settings)
        if not summary.still_running and not summary.unchecked:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs still running after {timeout}s: {summary}")
        time.sleep(0.2)


def requests_of(sandbox: SandboxHandle) -> dict[str, int]:
    """Requests served per endpoint since the last reset."""
    return dict(sandbox.stats()["requests"])
