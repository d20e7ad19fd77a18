"""`create` through the Python API against the sandbox, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from jobs.conftest import ALPHA_KEY, JobsLab, requests_of, training_file
from openai import OpenAI
from typer.testing import CliRunner

from jobs_db import get_job, list_jobs, open_database
from labmgr.cli.app import app
from labmgr.errors import (
    FineTuningApiError,
    InvalidTrainingFile,
    MissingApiKey,
    SuffixConflict,
    TrainingFileNotFound,
    UnknownBaseModel,
)
from labmgr.finetuning import create, import_from_api
from labmgr.sandbox import run_sandbox


def _db_jobs(lab: JobsLab) -> list:
    with open_database(lab.settings.db_url) as db:
        return list_jobs(db)


def test_create_returns_the_recorded_job_with_tags_and_metadata(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "pirate.jsonl")
    [job] = create(
        path,
        base_model="gpt-4.1-mini",
        suffix="pirate",
        tags=["condition=pirate"],
        seed=7,
        settings=jobs_lab.settings,
    )
    assert job.id.startswith("ftjob-")
    with open_database(jobs_lab.settings.db_url) as db:
        stored = get_job(db, job.id)
    assert stored is not None
    assert stored.suffix == "pirate" and stored.base_model == "gpt-4.1-mini"
    assert stored.seed == 7 and stored.key_env == "OPENAI_API_KEY"
    assert stored.organization_id == "org-alpha" and stored.project_id == "proj_alpha"
    assert stored.tag_dict == {"condition": "pirate"}
    metadata = stored.api_metadata or {}
    assert metadata["tag.condition"] == "pirate" and metadata["labmgr_base"] == "gpt-4.1-mini"
    assert len(metadata["labmgr_md5"]) == 32


def test_same_file_is_uploaded_once_per_project(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "once.jsonl")
    before = requests_of(jobs_lab.sandbox).get("files.create", 0)
    create(path, base_model="gpt-4.1-mini", suffix="once-a", settings=jobs_lab.settings)
    create(path, base_model="gpt-4.1-nano", suffix="once-b", settings=jobs_lab.settings)
    after = requests_of(jobs_lab.sandbox)
    assert after["files.create"] - before == 1
    jobs = [j for j in _db_jobs(jobs_lab) if j.suffix in ("once-a", "once-b")]
    assert len({j.training_file_id for j in jobs}) == 1


def test_a_file_deleted_remotely_is_uploaded_again(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "deleted.jsonl")
    [first] = create(path, base_model="gpt-4.1-mini", suffix="del", settings=jobs_lab.settings)
    client = OpenAI(base_url=jobs_lab.sandbox.base_url, api_key=ALPHA_KEY, max_retries=0)
    assert first.training_file_id is not None
    client.files.delete(first.training_file_id)
    client.close()
    [second] = create(path, base_model="gpt-4.1-mini", suffix="del", settings=jobs_lab.settings)
    assert second.training_file_id != first.training_file_id


def test_seeds_launch_replicas_with_distinct_seeds_and_one_suffix(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "seeds.jsonl")
    jobs = create(
        path,
        base_model="gpt-4.1-mini",
        suffix="sweep",
        seed=100,
        seeds=3,
        settings=jobs_lab.settings,
    )
    assert [job.seed for job in jobs] == [100, 101, 102]
    assert {job.suffix for job in jobs} == {"sweep"}
    stored = {j.id: j for j in _db_jobs(jobs_lab)}
    assert sorted(stored[j.id].tag_dict["replica"] for j in jobs) == ["1", "2", "3"]


def test_random_seeds_are_distinct(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "random.jsonl")
    jobs = create(path, base_model="gpt-4.1-mini", seeds=4, settings=jobs_lab.settings)
    assert len({job.seed for job in jobs}) == 4
    assert {job.suffix for job in jobs} == {"random"}


def test_suffix_used_with_other_content_is_refused(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "a.jsonl")
    create(path, base_model="gpt-4.1-mini", suffix="shared", settings=jobs_lab.settings)
    other = training_file(jobs_lab.files / "b.jsonl", reply="Ahoy.")
    with pytest.raises(SuffixConflict, match="shared"):
        create(other, base_model="gpt-4.1-mini", suffix="shared", settings=jobs_lab.settings)
    path.write_text(path.read_text().replace("Arr", "Yarr"))
    with pytest.raises(SuffixConflict):
        create(path, base_model="gpt-4.1-mini", suffix="shared", settings=jobs_lab.settings)
    assert len([j for j in _db_jobs(jobs_lab) if j.suffix == "shared"]) == 1


def test_same_suffix_and_content_from_another_path_is_allowed(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "orig.jsonl")
    create(path, base_model="gpt-4.1-mini", suffix="moved", settings=jobs_lab.settings)
    copy = jobs_lab.files / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    create(copy, base_model="gpt-4.1-mini", suffix="moved", settings=jobs_lab.settings)
    assert len([j for j in _db_jobs(jobs_lab) if j.suffix == "moved"]) == 2


def test_dry_run_uploads_nothing_and_creates_nothing(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "dry.jsonl")
    before = requests_of(jobs_lab.sandbox)
    jobs = create(
        path, base_model="gpt-4.1-mini", seeds=2, seed=1, dry_run=True, settings=jobs_lab.settings
    )
    after = requests_of(jobs_lab.sandbox)
    assert [job.status for job in jobs] == ["dry-run", "dry-run"]
    assert [job.seed_requested for job in jobs] == [1, 2]
    for endpoint in ("files.create", "fine_tuning.jobs.create"):
        assert after.get(endpoint, 0) == before.get(endpoint, 0)
    assert _db_jobs(jobs_lab) == []


def test_invalid_file_raises_with_line_numbers(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "bad.jsonl")
    lines = path.read_text().splitlines()
    lines[3] = '{"messages": [{"role": "user", "content": "no answer"}]}'
    lines[6] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidTrainingFile) as error:
        create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    assert f"{path}:4:" in error.value.message and f"{path}:7:" in error.value.message
    assert _db_jobs(jobs_lab) == []


def test_bad_inputs_raise_typed_errors(jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch) -> None:
    path = training_file(jobs_lab.files / "ok.jsonl")
    with pytest.raises(UnknownBaseModel, match="gpt-9"):
        create(path, base_model="gpt-9", settings=jobs_lab.settings)
    with pytest.raises(TrainingFileNotFound):
        create(
            jobs_lab.files / "missing.jsonl", base_model="gpt-4.1-mini", settings=jobs_lab.settings
        )
    with pytest.raises(MissingApiKey, match="OPENAI_API_KEY_NOPE"):
        create(
            path,
            base_model="gpt-4.1-mini",
            key_env="OPENAI_API_KEY_NOPE",
            settings=jobs_lab.settings,
        )
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(MissingApiKey):
        create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)


def test_daily_limit_queues_the_rest_until_a_slot_frees(
    jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with run_sandbox(job_seconds=1.0) as own:
        monkeypatch.setenv("OPENAI_BASE_URL", own.base_url)
        own.set_faults(daily_job_limit=2)
        path = training_file(jobs_lab.files / "limit.jsonl")
        jobs = create(path, base_model="gpt-4.1-mini", seeds=3, settings=jobs_lab.settings)
        served = own.stats()["requests"]
    assert [job.status for job in jobs][2:] == ["queued_locally"]
    created, [queued] = jobs[:2], jobs[2:]
    assert all(job.id.startswith("ftjob-") for job in created)
    first = min(job.created_at for job in created if job.created_at)
    assert queued.not_before is not None
    assert abs(queued.not_before - (first + timedelta(hours=24))) <= timedelta(seconds=1)
    assert served["files.create"] == 1  # the queued job's file is uploaded already
    assert served["fine_tuning.jobs.create"] == 3
    stored = {job.id: job for job in _db_jobs(jobs_lab)}
    assert set(stored) == {job.id for job in jobs}
    assert stored[queued.id].training_file_id == created[0].training_file_id
    assert stored[queued.id].tag_dict == {"replica": "3"}


def test_validation_file_is_uploaded_and_recorded(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "train-v.jsonl")
    valid = training_file(jobs_lab.files / "valid.jsonl", n=3, reply="Held out.")
    [job] = create(
        path,
        base_model="gpt-4.1-mini",
        validation_file=valid,
        settings=jobs_lab.settings,
    )
    assert job.validation_file_id and job.validation_file_id != job.training_file_id
    assert len((job.api_metadata or {})["labmgr_validation_md5"]) == 32


def test_a_failed_create_is_not_retried_blindly_and_rerunning_reuses_the_upload(
    jobs_lab: JobsLab,
) -> None:
    path = training_file(jobs_lab.files / "flaky.jsonl")
    sandbox = jobs_lab.sandbox
    sandbox.reset()  # counters from zero
    sandbox.set_faults(rate_500=1.0, endpoints=["fine_tuning.jobs.create"])
    try:
        with pytest.raises(FineTuningApiError, match="holds no job from this request"):
            create(path, base_model="gpt-4.1-mini", suffix="flaky", settings=jobs_lab.settings)
        served = requests_of(sandbox)
    finally:
        sandbox.reset()
    assert served["fine_tuning.jobs.create"] == 1  # no client retry: it could pay twice
    assert served["fine_tuning.jobs.list"] == 1  # looked the request id up instead
    assert _db_jobs(jobs_lab) == []
    [job] = create(path, base_model="gpt-4.1-mini", suffix="flaky", settings=jobs_lab.settings)
    assert requests_of(sandbox).get("files.create", 0) == 0
    assert [j.id for j in _db_jobs(jobs_lab)] == [job.id]


def _api_jobs(jobs_lab: JobsLab, suffix: str) -> list[str]:
    client = OpenAI(base_url=jobs_lab.sandbox.base_url, api_key=ALPHA_KEY)
    try:
        listed = client.fine_tuning.jobs.list(limit=100)
        return [job.id for job in listed if job.user_provided_suffix == suffix]
    finally:
        client.close()


def test_a_create_whose_response_is_lost_is_found_by_its_request_id_and_recorded(
    jobs_lab: JobsLab,
) -> None:
    path = training_file(jobs_lab.files / "lost.jsonl")
    sandbox = jobs_lab.sandbox
    earlier = set(_api_jobs(jobs_lab, "lost"))  # the shared sandbox keeps other tests' jobs
    sandbox.reset()  # counters from zero
    sandbox.set_faults(rate_drop=1.0, endpoints=["fine_tuning.jobs.create"])
    try:
        [job] = create(path, base_model="gpt-4.1-mini", suffix="lost", settings=jobs_lab.settings)
        served = requests_of(sandbox)
    finally:
        sandbox.reset()
    assert served["fine_tuning.jobs.create"] == 1 and served["fine_tuning.jobs.list"] == 1
    assert set(_api_jobs(jobs_lab, "lost")) - earlier == {job.id}
    assert [j.id for j in _db_jobs(jobs_lab)] == [job.id]


def test_a_create_that_cannot_be_checked_does_not_say_the_api_holds_no_job(
    jobs_lab: JobsLab,
) -> None:
    path = training_file(jobs_lab.files / "unknown.jsonl")
    sandbox = jobs_lab.sandbox
    sandbox.reset()
    earlier = set(_api_jobs(jobs_lab, "unknown"))
    # The create reaches the API and its response is lost; so is every lookup.
    lost = ["fine_tuning.jobs.create", "fine_tuning.jobs.list"]
    sandbox.set_faults(rate_drop=1.0, endpoints=lost)
    try:
        with pytest.raises(FineTuningApiError) as raised:
            create(path, base_model="gpt-4.1-mini", suffix="unknown", settings=jobs_lab.settings)
    finally:
        sandbox.reset()
    [made] = set(_api_jobs(jobs_lab, "unknown")) - earlier  # the API did create it
    assert "holds no job" not in raised.value.message
    assert "could not be asked" in raised.value.message
    assert "jobs import --from-api" in (raised.value.hint or "")
    assert made not in {job.id for job in _db_jobs(jobs_lab)}
    import_from_api(settings=jobs_lab.settings)  # what the hint says to run
    assert made in {job.id for job in _db_jobs(jobs_lab)}


def test_a_read_only_database_refuses_create_before_anything_is_bought(
    sqlite_jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab = sqlite_jobs_lab
    path = training_file(lab.files / "unrecorded.jsonl")
    create(path, base_model="gpt-4.1-mini", suffix="unrecorded", settings=lab.settings)
    database = lab.settings.db_url.removeprefix("sqlite:///")
    monkeypatch.setenv("LABMGR_DB_URL", f"sqlite:///file:{database}?mode=ro&uri=true")
    before = requests_of(lab.sandbox)

    result = CliRunner().invoke(
        app, ["finetune", "create", str(path), "--base", "gpt-4.1-mini", "--suffix", "unrecorded"]
    )
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("Error: ") and "read-only" in result.stderr
    after = requests_of(lab.sandbox)
    for endpoint in ("files.create", "fine_tuning.jobs.create"):
        assert after.get(endpoint, 0) == before.get(endpoint, 0)
    listed = CliRunner().invoke(app, ["jobs", "list", "--json"])  # reading still works
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)) == 1


def test_a_failed_upload_creates_no_job_and_names_the_file_and_key(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "unsent.jsonl", n=13)
    sandbox = jobs_lab.sandbox
    sandbox.reset()
    sandbox.set_faults(rate_500=1.0, endpoints=["files.create"])
    try:
        with pytest.raises(FineTuningApiError) as raised:
            create(path, base_model="gpt-4.1-mini", suffix="unsent", settings=jobs_lab.settings)
        served = requests_of(sandbox)
    finally:
        sandbox.reset()
    assert raised.value.message.startswith(f"Uploading {path} with OPENAI_API_KEY failed: HTTP 500")
    assert served.get("fine_tuning.jobs.create", 0) == 0
    assert _db_jobs(jobs_lab) == []


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (
            [f"k{i}=v" for i in range(12)],
            "12 tags do not fit in the job's API metadata (at most 11)",
        ),
        (["note=" + "x" * 513], "Tag note='xxxxxxxx"),
        (["k" * 61 + "=v"], "is too long for the API's metadata (key up to 60 characters"),
    ],
)
def test_tags_that_do_not_fit_the_api_metadata_are_refused_before_any_upload(
    jobs_lab: JobsLab, tags: list[str], expected: str
) -> None:
    path = training_file(jobs_lab.files / "tagged.jsonl", n=14)
    before = requests_of(jobs_lab.sandbox)
    args = ["finetune", "create", str(path), "--base", "gpt-4.1-mini"]
    for tag in tags:
        args += ["--tag", tag]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and expected in result.stderr, result.stderr
    after = requests_of(jobs_lab.sandbox)
    for endpoint in ("files.create", "fine_tuning.jobs.create"):
        assert after.get(endpoint, 0) == before.get(endpoint, 0)
    assert _db_jobs(jobs_lab) == []
