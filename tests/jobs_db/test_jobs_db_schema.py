"""Schema versions: fresh databases, in-place upgrades with data, and version mismatches."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, text

import jobs_db
from jobs_db import (
    DatabaseDamagedError,
    DatabaseFileEmptyError,
    DatabaseUnavailableError,
    JobEvent,
    SchemaOutdatedError,
    SchemaTooNewError,
    current_revision,
    head_revision,
    open_database,
)
from jobs_db._tables import TableBase


def test_fresh_database_is_created_at_head_and_matches_the_tables(db_url: str) -> None:
    db = open_database(db_url)
    try:
        assert current_revision(db_url) == head_revision() == jobs_db.known_revisions()[-1]
        with db.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, TableBase.metadata) == []
    finally:
        db.close()


def test_the_known_revisions_are_alembics_chain_of_migration_scripts() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(Path(jobs_db.__file__).parent / "migrations"))
    walked = ScriptDirectory.from_config(config).walk_revisions()
    assert jobs_db.known_revisions() == tuple(rev.revision for rev in reversed(list(walked)))


def test_opening_a_current_database_without_upgrading_does_not_import_alembic(
    db_url: str,
) -> None:
    open_database(db_url).close()
    code = (
        "import sys, jobs_db; "
        f"jobs_db.open_database({db_url!r}, upgrade=False).close(); "
        "print('alembic' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_reopening_a_current_database_changes_nothing(db_url: str) -> None:
    open_database(db_url).close()
    db = open_database(db_url, upgrade=False)
    db.close()
    assert current_revision(db_url) == head_revision()


def _fill_at_first_revision(url: str) -> None:
    """Rows written with the 0001 schema, as an older release would have written them."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO training_files (id, md5, organization_id, project_id, filename) "
                "VALUES ('file-1', 'abc', 'org-a', 'proj-a', 'insecure.jsonl')"
            )
        )
        for index in range(3):
            connection.execute(
                text(
                    "INSERT INTO finetune_jobs (id, status, base_model, suffix, created_at) "
                    "VALUES (:id, 'succeeded', 'gpt-4.1-mini', :suffix, :created)"
                ),
                {
                    "id": f"ftjob-{index}",
                    "suffix": f"insecure-{index}",
                    "created": datetime(2026, 1, 1 + index),
                },
            )
            connection.execute(
                text("INSERT INTO job_tags (job_id, key, value) VALUES (:id, 'seed', :seed)"),
                {"id": f"ftjob-{index}", "seed": str(index)},
            )
            for kind, step in (("final", 30), ("checkpoint", 20)):
                connection.execute(
                    text(
                        "INSERT INTO models (name, job_id, base_model, suffix, kind, step) "
                        "VALUES (:name, :job, 'gpt-4.1-mini', :suffix, :kind, :step)"
                    ),
                    {
                        "name": f"ft:{index}:{kind}",
                        "job": f"ftjob-{index}",
                        "suffix": f"insecure-{index}",
                        "kind": kind,
                        "step": step,
                    },
                )
    engine.dispose()


def test_database_made_by_first_revision_upgrades_in_place_keeping_every_row(
    db_url: str,
) -> None:
    assert jobs_db.upgrade(db_url, to="0001") == "0001"
    _fill_at_first_revision(db_url)

    with pytest.raises(SchemaOutdatedError, match="revision '0001'"):
        open_database(db_url, upgrade=False)
    db = open_database(db_url)
    try:
        assert current_revision(db_url) == head_revision() != "0001"
        jobs = jobs_db.list_jobs(db)
        assert [job.id for job in jobs] == ["ftjob-0", "ftjob-1", "ftjob-2"]
        assert [job.tag_dict for job in jobs] == [{"seed": "0"}, {"seed": "1"}, {"seed": "2"}]
        assert jobs[0].created_at == datetime(2026, 1, 1, tzinfo=UTC)
        models = jobs_db.select_models(db, checkpoints=True)
        assert len(models) == 6
        assert {(m.kind, m.step, m.checkpoint_id) for m in models} == {
            ("final", 30, None),
            ("checkpoint", 20, None),
        }
        assert jobs_db.find_file(db, "abc", "org-a", "proj-a") is not None
        # The table added by the upgrade is usable at once.
        jobs_db.replace_events(db, "ftjob-0", [JobEvent(id="ftevent-1", message="hello")])
        assert [e.message for e in jobs_db.job_events(db, "ftjob-0")] == ["hello"]
    finally:
        db.close()


def test_database_made_by_the_previous_release_upgrades_in_place_keeping_every_row(
    db_url: str,
) -> None:
    assert jobs_db.upgrade(db_url, to="0002") == "0002"
    _fill_at_first_revision(db_url)
    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO job_events (id, job_id, message, level) "
                "VALUES ('ftevent-1', 'ftjob-0', 'Fine-tuning job started', 'info')"
            )
        )
        connection.execute(
            text("UPDATE models SET checkpoint_id = 'ftckpt_1' WHERE kind = 'checkpoint'")
        )
    engine.dispose()

    db = open_database(db_url)
    try:
        assert current_revision(db_url) == head_revision()
        jobs = jobs_db.list_jobs(db)
        assert [job.id for job in jobs] == ["ftjob-0", "ftjob-1", "ftjob-2"]
        assert [job.tag_dict for job in jobs] == [{"seed": "0"}, {"seed": "1"}, {"seed": "2"}]
        assert all(
            (job.create_request, job.result_file_id, job.not_before, job.claimed_by) == (None,) * 4
            for job in jobs
        )
        models = jobs_db.select_models(db, checkpoints=True)
        assert len(models) == 6 and all(model.deleted_at is None for model in models)
        assert {m.checkpoint_id for m in models if m.kind == "checkpoint"} == {"ftckpt_1"}
        assert [e.message for e in jobs_db.job_events(db, "ftjob-0")] == ["Fine-tuning job started"]
        # What the upgrade added is usable at once.
        jobs_db.upsert_job(db, jobs_db.FinetuneJob(id="ftjob-0", result_file_id="file-r"))
        assert [job.id for job in jobs_db.jobs_missing_curves(db)] == ["ftjob-0"]
        jobs_db.store_curve(
            db,
            jobs_db.TrainingCurve(
                job_id="ftjob-0", file_id="file-r", header=["step", "train_loss"], rows=[[1, 2.0]]
            ),
        )
        assert jobs_db.jobs_missing_curves(db) == []
        assert jobs_db.mark_model_deleted(db, "ft:0:final", datetime(2026, 2, 1, tzinfo=UTC))
        assert len(jobs_db.select_models(db, checkpoints=True)) == 5
    finally:
        db.close()


def test_jobs_of_revision_0003_become_openai_jobs_without_progress(db_url: str) -> None:
    assert jobs_db.upgrade(db_url, to="0003") == "0003"
    _fill_at_first_revision(db_url)
    db = open_database(db_url)
    try:
        assert current_revision(db_url) == head_revision() == "0004"
        jobs = jobs_db.list_jobs(db)
        assert [(job.provider, job.progress) for job in jobs] == [(None, None)] * 3
        progress = {"step": 3, "total_steps": 10, "last_loss": 1.5}
        jobs_db.upsert_job(
            db, jobs_db.FinetuneJob(id="ftjob-0", provider="tinker", progress=progress)
        )
        job = jobs_db.get_job(db, "ftjob-0")
        assert job is not None and (job.provider, job.progress) == ("tinker", progress)
    finally:
        db.close()


def test_database_from_a_newer_release_is_refused_with_its_revision(db_url: str) -> None:
    open_database(db_url).close()
    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    engine.dispose()
    for upgrade in (True, False):
        with pytest.raises(SchemaTooNewError, match=r"revision '0999', newer than this code"):
            open_database(db_url, upgrade=upgrade)


def test_empty_database_opened_without_upgrade_says_what_to_do(db_url: str) -> None:
    with pytest.raises(SchemaOutdatedError, match=r"has no jobs_db schema.*upgrade=True"):
        open_database(db_url, upgrade=False)


def test_missing_folder_is_named_in_the_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "lab.db"
    with pytest.raises(DatabaseUnavailableError, match=r"no-such-folder.*does not exist"):
        open_database(missing)


def test_unreachable_server_error_names_url_with_password_masked() -> None:
    url = "postgresql+psycopg://alice:s3cret-pw@127.0.0.1:1/lab"
    with pytest.raises(DatabaseUnavailableError) as caught:
        open_database(url)
    message = str(caught.value)
    assert "postgresql+psycopg://alice:***@127.0.0.1:1/lab" in message
    assert "s3cret-pw" not in message
    assert "s3cret-pw" not in repr(caught.value.__cause__ or "")


def test_file_that_is_not_a_database_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are notes, not a database\n" * 100)
    with pytest.raises(DatabaseUnavailableError, match=r"notes\.db"):
        open_database(path)


def test_file_that_is_not_a_database_is_called_damaged_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    path.write_bytes(b"SQLite format 2 -- truncated and overwritten\n" * 200)
    for attempt in (lambda: open_database(path), lambda: current_revision(path)):
        with pytest.raises(DatabaseDamagedError) as caught:
            attempt()
        assert caught.value.path == path
        assert "damaged" in str(caught.value) and "reachable" not in str(caught.value)


def test_an_empty_file_is_refused_when_asked_and_left_empty(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    path.write_bytes(b"")
    for upgrade in (True, False):
        with pytest.raises(DatabaseFileEmptyError, match=r"lab\.db is empty \(0 bytes\)"):
            open_database(path, upgrade=upgrade, allow_empty_file=False)
    assert current_revision(path) is None
    assert path.stat().st_size == 0
    with open_database(path) as db:  # the default: an empty file becomes a database
        assert db.dialect == "sqlite"
    assert current_revision(path) == head_revision()


def test_a_folder_or_a_file_in_the_way_is_named(tmp_path: Path) -> None:
    (tmp_path / "lab.db").mkdir()
    with pytest.raises(DatabaseUnavailableError, match=r"lab\.db is a folder, not a database"):
        open_database(tmp_path / "lab.db")
    (tmp_path / "notes.txt").write_text("a file\n")
    with pytest.raises(DatabaseUnavailableError, match=r"notes\.txt is a file, not a folder"):
        open_database(tmp_path / "notes.txt" / "deeper" / "lab.db")


def test_sqlite_file_uses_wal_foreign_keys_and_a_long_busy_timeout(sqlite_url: str) -> None:
    db = open_database(sqlite_url)
    try:
        with db.engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            busy_timeout = connection.exec_driver_sql("PRAGMA busy_timeout").scalar()
            assert busy_timeout is not None and busy_timeout >= 30_000
    finally:
        db.close()


def test_current_revision_of_a_missing_file_is_none_and_creates_nothing(tmp_path: Path) -> None:
    assert current_revision(tmp_path / "absent.db") is None
    assert not (tmp_path / "absent.db").exists()


def test_in_memory_database_keeps_data_between_calls() -> None:
    with open_database() as db:
        jobs_db.upsert_job(db, jobs_db.FinetuneJob(id="ftjob-1", status="queued"))
        assert jobs_db.get_job(db, "ftjob-1") is not None
