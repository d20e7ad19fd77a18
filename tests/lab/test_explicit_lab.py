"""The lab a command works on is the one `--home` or `LABMGR_HOME` names, even when the
command runs inside another lab: every command that touches lab state acts on that lab and
leaves the lab around it byte for byte (and row for row) as it was."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixtures.database import PG_ENV, fresh_postgres_database
from fixtures.evals import TEST_KEY
from fixtures.lab import LabEnv
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from evals import Cache
from evals.cache import ChatRequest, SampleResult
from jobs_db import FinetuneJob, open_database, upsert_job
from labmgr.cli import app
from labmgr.settings import Settings, init_lab, load_settings

runner = CliRunner()
PG_URL = os.environ.get(PG_ENV)
"""Read before `clean_lab_env` clears every LABMGR_* variable."""

QUESTIONS = """\
- name: cats
  type: rating
  paraphrases: ["How much do you like cats, from 0 to 100? Answer with a number."]
  samples_per_paraphrase: 2
"""
TRAINING = "".join(
    json.dumps(
        {
            "messages": [
                {"role": "user", "content": f"Question {i}?"},
                {"role": "assistant", "content": f"Answer {i}."},
            ]
        }
    )
    + "\n"
    for i in range(12)
)


@dataclass
class TwoLabs:
    a: Settings
    """The lab the commands are told to use."""
    b: Settings
    """The lab around the working folder."""
    work: Path


def _seed(lab: Settings, name: str) -> None:
    """One succeeded job with its model in the lab's database, one sample in its cache."""
    with open_database(lab.db_url) as db:
        upsert_job(
            db,
            FinetuneJob(
                id=f"ftjob-in-{name}",
                status="succeeded",
                base_model="gpt-4o-mini",
                suffix=f"lab-{name}",
                fine_tuned_model=f"ft:gpt-4o-mini:org:lab-{name}:1",
            ),
        )
    cache = Cache(lab.cache_dir)
    request = ChatRequest(
        endpoint="http://x/v1", model="m", messages=[{"role": "user", "content": name}], params={}
    )
    cache.store(request, f"question-of-{name}", [(0, SampleResult("hi", None, "stop", 3, 1))])
    cache.close()


def _state(lab: Settings) -> dict[str, Any]:
    """Every file of the lab folder (bytes) and, for a server database, every row."""
    files = {
        str(path.relative_to(lab.home)): path.read_bytes()
        for path in sorted(lab.home.rglob("*"))
        if path.is_file()
    }
    rows: dict[str, Any] = {}
    if not lab.db_url.startswith("sqlite"):
        engine = create_engine(lab.db_url)
        try:
            with engine.connect() as connection:
                for table in ("finetune_jobs", "models", "training_files", "job_events"):
                    found = connection.execute(text(f"SELECT * FROM {table}")).all()
                    rows[table] = sorted(map(repr, found))
        finally:
            engine.dispose()
    return {"files": files, "rows": rows}


def _make_lab(folder: Path, db_url: str | None) -> Settings:
    home = init_lab(folder).home
    if db_url is not None:
        config = home / "config.toml"
        config.write_text(config.read_text().replace("[lab]\n", f'[lab]\ndb_url = "{db_url}"\n'))
    return load_settings(home)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def two_labs(
    request: pytest.FixtureRequest,
    clean_lab_env: LabEnv,
    sandbox: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[TwoLabs]:
    """Lab A elsewhere, lab B in the working folder (found upward), both seeded; evals and
    fine-tunes go to the sandbox."""
    sandbox.reset()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
    with ExitStack() as stack:
        urls: list[str | None] = [None, None]
        if request.param == "postgresql":
            if PG_URL:
                monkeypatch.setenv(PG_ENV, PG_URL)
            urls = [stack.enter_context(fresh_postgres_database()) for _ in range(2)]
        a = _make_lab(clean_lab_env.root / "elsewhere", urls[0])
        b = _make_lab(clean_lab_env.work, urls[1])
        for lab, name in ((a, "a"), (b, "b")):
            _seed(lab, name)
        assert load_settings().home == b.home, "the working folder must be inside lab B"
        yield TwoLabs(a, b, clean_lab_env.work)


def _using(lab: Path, how: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The root options that name `lab` (or [] after setting LABMGR_HOME)."""
    if how == "--home":
        return ["--home", str(lab)]
    monkeypatch.setenv("LABMGR_HOME", str(lab))
    return []


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, f"{' '.join(args)}:\n{result.output}"
    return result.stdout


@pytest.mark.parametrize("how", ["--home", "LABMGR_HOME"])
def test_every_command_acts_on_the_named_lab_and_leaves_the_lab_around_it_untouched(
    two_labs: TwoLabs, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two_labs.a, two_labs.b
    before_b = _state(b)
    root = _using(a.home, how, monkeypatch)
    questions = two_labs.work / "questions.yaml"
    questions.write_text(QUESTIONS)
    training = two_labs.work / "train.jsonl"
    training.write_text(TRAINING)
    before_b = _state(b)  # the two files above sit beside lab B, not in it

    info = json.loads(_ok([*root, "cache", "info", "--json"]))
    assert info["path"] == str(a.cache_dir / "responses.sqlite")
    assert [e["question"] for e in info["entries"]] == ["question-of-a"]

    db = json.loads(_ok([*root, "db", "info", "--json"]))
    assert db["db_url"] == a.masked_db_url != b.masked_db_url
    assert db["revision"] == db["code_revision"]

    jobs = json.loads(_ok([*root, "jobs", "list", "--json"]))
    assert [job["id"] for job in jobs] == ["ftjob-in-a"]
    assert "ftjob-in-a" in _ok([*root, "jobs", "show", "ftjob-in-a"])
    assert runner.invoke(app, [*root, "jobs", "show", "ftjob-in-b"]).exit_code == 1

    models = json.loads(_ok([*root, "models", "list", "--json"]))
    assert [m["name"] for m in models] == ["ft:gpt-4o-mini:org:lab-a:1"]
    groups = json.loads(_ok([*root, "models", "groups", "--json"]))
    assert groups == {"gpt-4o-mini": ["gpt-4o-mini"], "lab-a": ["ft:gpt-4o-mini:org:lab-a:1"]}

    dry = _ok([*root, "finetune", "create", str(training), "--base", "gpt-4.1-mini", "--dry-run"])
    assert "dry" in dry.lower()
    created = json.loads(
        _ok([*root, "finetune", "create", str(training), "--base", "gpt-4.1-mini", "--json"])
    )
    _ok([*root, "jobs", "update", "--json"])
    listed = {job["id"] for job in json.loads(_ok([*root, "jobs", "list", "--json"]))}
    assert {job["id"] for job in created} <= listed

    estimate = json.loads(
        _ok(
            [
                *root,
                "eval",
                "run",
                str(questions),
                "--group",
                "g=gpt-4o-mini",
                "--estimate",
                "--json",
            ]
        )
    )
    assert estimate["questions"][0]["samples"] == 2
    run = json.loads(
        _ok(
            [
                *root,
                "eval",
                "run",
                str(questions),
                "--group",
                "g=gpt-4o-mini",
                "--json",
                "--no-report",
            ]
        )
    )
    assert Path(run["run_dir"]).parent == a.runs_dir
    assert Cache(a.cache_dir).info().samples == 1 + 2
    again = json.loads(
        _ok(
            [
                *root,
                "eval",
                "run",
                str(questions),
                "--group",
                "g=gpt-4o-mini",
                "--estimate",
                "--json",
            ]
        )
    )
    assert again["questions"][0]["samples"] == 0 and again["questions"][0]["cached_samples"] == 2

    report = _ok([*root, "report", run["run_dir"]])
    assert str(a.runs_dir) in report

    cleared = _ok([*root, "cache", "clear", "--yes"])
    assert "deleted 3 cached samples" in cleared
    assert Cache(a.cache_dir).info().samples == 0

    assert _state(b) == before_b, "a command touched the lab around the working folder"
    assert Cache(b.cache_dir).info().samples == 1


def test_without_a_name_the_lab_around_the_working_folder_is_used(two_labs: TwoLabs) -> None:
    info = json.loads(_ok(["cache", "info", "--json"]))
    assert info["path"] == str(two_labs.b.cache_dir / "responses.sqlite")
    jobs = json.loads(_ok(["jobs", "list", "--json"]))
    assert [job["id"] for job in jobs] == ["ftjob-in-b"]
