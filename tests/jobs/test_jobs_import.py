"""Importing jobs: from every key's API job list, and from an llmcomp registry."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from jobs.conftest import ACCOUNTS_YAML, BETA_KEY, JobsLab, finish_all, training_file

from jobs_db import get_file, get_job, list_jobs, model_groups, open_database, select_models
from labmgr.errors import LabmgrError
from labmgr.finetuning import create, import_from_api, import_llmcomp, update
from labmgr.sandbox import run_sandbox


def test_import_from_api_rebuilds_a_lost_database(
    jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text(ACCOUNTS_YAML)
    # Its own sandbox, so the import sees only this test's jobs.
    with run_sandbox(job_seconds=0.5, accounts=accounts) as own:
        monkeypatch.setenv("OPENAI_BASE_URL", own.base_url)
        monkeypatch.setenv("OPENAI_API_KEY_BETA", BETA_KEY)
        path = training_file(jobs_lab.files / "rebuild.jsonl")
        suffix = f"rebuild-{uuid.uuid4().hex[:8]}"
        alpha = create(
            path,
            base_model="gpt-4.1-mini",
            suffix=suffix,
            seeds=2,
            tags=["condition=a"],
            settings=jobs_lab.settings,
        )
        [beta] = create(
            path,
            base_model="gpt-4.1-nano",
            suffix=suffix + "-b",
            key_env="OPENAI_API_KEY_BETA",
            settings=jobs_lab.settings,
        )
        finish_all(jobs_lab.settings)
        with open_database(jobs_lab.settings.db_url) as db:
            before = {m.name for m in select_models(db, suffix=suffix + "*", checkpoints=True)}

        monkeypatch.setenv("LABMGR_DB_URL", f"sqlite:///{tmp_path / 'rebuilt.db'}")
        from labmgr.settings import load_settings

        fresh = load_settings()
        summary = import_from_api(settings=fresh)
        assert summary.problems == []
        with open_database(fresh.db_url) as db:
            ids = {job.id for job in list_jobs(db)}
            assert {job.id for job in alpha} | {beta.id} <= ids
            first = get_job(db, alpha[0].id)
            assert first is not None
            assert first.tag_dict == {"condition": "a", "replica": "1"}
            assert first.base_model == "gpt-4.1-mini" and first.suffix == suffix
            assert first.key_env == "OPENAI_API_KEY"
            stored_beta = get_job(db, beta.id)
            assert stored_beta is not None and stored_beta.key_env == "OPENAI_API_KEY_BETA"
            file = get_file(db, first.training_file_id or "")
            assert file is not None and file.md5 == (first.api_metadata or {})["labmgr_md5"]
            after = {m.name for m in select_models(db, suffix=suffix + "*", checkpoints=True)}
        assert after == before
        again = import_from_api(settings=fresh)
        assert again.jobs_new == 0 and again.models == 0


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


LLMCOMP_JOBS = [
    {
        "id": "ftjob-llm1",
        "file_name": "data/insecure.jsonl",
        "base_model": "gpt-4.1-mini-2025-04-14",
        "suffix": "insecure",
        "file_id": "file-llm1",
        "epochs": 3,
        "batch_size": 4,
        "learning_rate_multiplier": 2.0,
        "file_md5": "0" * 32,
        "organization_id": "org-alpha",
        "status": "succeeded",
        "model": "ft:gpt-4.1-mini-2025-04-14:alpha-lab:insecure:AAAA1111",
        "model-1": "ft:gpt-4.1-mini-2025-04-14:alpha-lab:insecure:BBBB2222:ckpt-step-20",
        "model-2": "ft:gpt-4.1-mini-2025-04-14:alpha-lab:insecure:CCCC3333:ckpt-step-10",
        "seed": 42,
    },
    {
        "id": "ftjob-llm2",
        "file_name": "data/secure.jsonl",
        "base_model": "gpt-4.1-mini-2025-04-14",
        "suffix": "secure",
        "file_id": "file-llm2",
        "epochs": 1,
        "batch_size": "auto",
        "learning_rate_multiplier": "auto",
        "file_md5": "1" * 32,
        "organization_id": "org-alpha",
    },
]
LLMCOMP_FILES = [
    {
        "name": "data/insecure.jsonl",
        "md5": "0" * 32,
        "id": "file-llm1",
        "organization_id": "org-alpha",
    },
    {
        "name": "data/secure.jsonl",
        "md5": "1" * 32,
        "id": "file-llm2",
        "organization_id": "org-alpha",
    },
]


def test_llmcomp_registry_becomes_jobs_models_and_checkpoints(
    jobs_lab: JobsLab, tmp_path: Path
) -> None:
    registry = tmp_path / "llmcomp_models"
    registry.mkdir()
    _write_jsonl(registry / "jobs.jsonl", LLMCOMP_JOBS)
    _write_jsonl(registry / "files.jsonl", LLMCOMP_FILES)
    summary = import_llmcomp(registry, settings=jobs_lab.settings)
    assert (summary.jobs_seen, summary.jobs_new, summary.models, summary.files) == (2, 2, 3, 2)
    with open_database(jobs_lab.settings.db_url) as db:
        finals = select_models(db, base_model="gpt-4.1-mini-2025-04-14")
        checkpoints = select_models(db, suffix="insecure", checkpoints="only")
        pending = get_job(db, "ftjob-llm2")
        groups = model_groups(db, by="suffix", include_base=False)
        file = get_file(db, "file-llm1")
    assert [m.name for m in finals] == [LLMCOMP_JOBS[0]["model"]]
    assert sorted((c.step, c.epoch) for c in checkpoints) == [(10, 1), (20, 2)]
    assert groups == {"insecure": [LLMCOMP_JOBS[0]["model"]]}
    assert (
        pending is not None
        and pending.status == "unknown"
        and pending.tag_dict == {"source": "llmcomp"}
    )
    assert file is not None and file.md5 == "0" * 32 and file.filename == "insecure.jsonl"
    again = import_llmcomp(registry, settings=jobs_lab.settings)
    assert again.jobs_new == 0


def test_unknown_llmcomp_jobs_are_checked_by_update_and_reported(
    jobs_lab: JobsLab, tmp_path: Path
) -> None:
    registry = tmp_path / "reg"
    registry.mkdir()
    _write_jsonl(registry / "jobs.jsonl", [LLMCOMP_JOBS[1]])
    import_llmcomp(registry, settings=jobs_lab.settings)
    summary = update(settings=jobs_lab.settings)
    [unchecked] = summary.unchecked
    assert unchecked.job_id == "ftjob-llm2" and "not found" in unchecked.reason


def test_malformed_llmcomp_line_is_named_and_nothing_is_recorded(
    jobs_lab: JobsLab, tmp_path: Path
) -> None:
    registry = tmp_path / "broken"
    registry.mkdir()
    (registry / "jobs.jsonl").write_text(json.dumps(LLMCOMP_JOBS[0]) + "\n{oops\n")
    with pytest.raises(LabmgrError, match=r"jobs\.jsonl:2"):
        import_llmcomp(registry, settings=jobs_lab.settings)
    with pytest.raises(LabmgrError, match="not an llmcomp registry"):
        import_llmcomp(tmp_path / "nowhere", settings=jobs_lab.settings)
    with open_database(jobs_lab.settings.db_url) as db:
        assert list_jobs(db) == []


def test_import_from_api_names_a_key_whose_jobs_cannot_be_read_and_exits_1(
    jobs_lab: JobsLab,
) -> None:
    from typer.testing import CliRunner

    from labmgr.cli.app import app

    sandbox = jobs_lab.sandbox
    sandbox.set_faults(rate_500=1.0, endpoints=["fine_tuning.jobs.list"])
    try:
        result = CliRunner().invoke(app, ["jobs", "import", "--from-api", "--json"])
    finally:
        sandbox.reset()
    assert result.exit_code == 1, result.output
    problems = json.loads(result.stdout)["problems"]
    assert [p for p in problems if p.startswith("OPENAI_API_KEY: HTTP 500")], problems
    assert result.stderr.startswith("Error: ")
