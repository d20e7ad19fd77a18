"""Writes: idempotent upserts that keep other writers' fields, checkpoints, events, tags."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from jobs_db import (
    Database,
    DatabaseInputError,
    FinetuneJob,
    JobEvent,
    JobTag,
    Model,
    TrainingFile,
    UnknownJobError,
    delete_job,
    find_file,
    get_job,
    job_events,
    job_models,
    open_database,
    remove_job_tags,
    replace_checkpoints,
    replace_events,
    select_models,
    upsert_file,
    upsert_job,
    upsert_model,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def memory_db() -> Iterator[Database]:
    """An in-memory database, for checks that happen before anything reaches the server."""
    with open_database() as db:
        yield db


def _job(**fields: Any) -> FinetuneJob:
    return FinetuneJob(id="ftjob-1", **fields)


def test_upsert_twice_is_idempotent(database: Database) -> None:
    job = _job(status="queued", suffix="insecure", hyperparameters_requested={"n_epochs": "auto"})
    assert upsert_job(database, job, tags={"seed": "1"})
    assert upsert_job(database, job, tags={"seed": "1"})
    with database.session(write=False) as session:
        assert session.scalar(select(func.count()).select_from(FinetuneJob)) == 1
    stored = get_job(database, "ftjob-1")
    assert stored is not None
    assert stored.hyperparameters_requested == {"n_epochs": "auto"}
    assert stored.tag_dict == {"seed": "1"}


def test_update_keeps_fields_it_did_not_set(database: Database) -> None:
    upsert_job(
        database,
        _job(
            status="queued",
            key_env="OPENAI_API_KEY_LAB",
            suffix="insecure",
            seed_requested=7,
            api_metadata={"labmgr_suffix": "insecure"},
        ),
    )
    upsert_job(database, _job(status="running", phase="training", seed=7, refreshed_at=T0))
    stored = get_job(database, "ftjob-1")
    assert stored is not None
    assert (stored.status, stored.phase, stored.seed, stored.seed_requested) == (
        "running",
        "training",
        7,
        7,
    )
    assert stored.key_env == "OPENAI_API_KEY_LAB"
    assert stored.suffix == "insecure"
    assert stored.api_metadata == {"labmgr_suffix": "insecure"}


def test_job_read_back_and_changed_writes_only_what_changed(database: Database) -> None:
    upsert_job(database, _job(status="queued", suffix="insecure"))
    mine = get_job(database, "ftjob-1")
    assert mine is not None
    upsert_job(database, _job(status="running", phase="training"))  # another writer
    mine.suffix = "insecure-v2"
    upsert_job(database, mine)
    stored = get_job(database, "ftjob-1")
    assert stored is not None
    assert (stored.suffix, stored.status, stored.phase) == ("insecure-v2", "running", "training")


def test_explicit_none_clears_a_field(database: Database) -> None:
    upsert_job(database, _job(status="running", estimated_finish=T0))
    upsert_job(database, _job(status="succeeded", estimated_finish=None))
    stored = get_job(database, "ftjob-1")
    assert stored is not None and stored.estimated_finish is None


def test_stale_snapshot_never_overwrites_a_newer_refresh(database: Database) -> None:
    assert upsert_job(database, _job(status="succeeded", refreshed_at=T0))
    assert not upsert_job(
        database, _job(status="running", refreshed_at=T0 - timedelta(minutes=1)), tags=["x=1"]
    )
    stored = get_job(database, "ftjob-1")
    assert stored is not None
    assert (stored.status, stored.refreshed_at, stored.tag_dict) == ("succeeded", T0, {})


def test_unknown_status_strings_are_kept_raw(database: Database) -> None:
    upsert_job(database, _job(status="paused"))
    stored = get_job(database, "ftjob-1")
    assert stored is not None and stored.status == "paused" and not stored.is_final


def test_new_job_without_status_is_refused(database: Database) -> None:
    with pytest.raises(DatabaseInputError, match="finetune_jobs row"):
        upsert_job(database, _job(suffix="insecure"))
    assert get_job(database, "ftjob-1") is None


def test_key_env_must_be_a_variable_name_and_is_never_echoed(memory_db: Database) -> None:
    with pytest.raises(DatabaseInputError, match="name\\* of an environment variable") as caught:
        upsert_job(memory_db, _job(status="queued", key_env="sk-test-alpha-01234"))
    assert "sk-test-alpha" not in str(caught.value)
    with pytest.raises(DatabaseInputError):
        upsert_file(memory_db, TrainingFile(id="file-1", key_env="sk-test-alpha"))
    assert get_job(memory_db, "ftjob-1") is None


def test_naive_datetimes_are_refused(memory_db: Database) -> None:
    with pytest.raises(DatabaseInputError, match=r"FinetuneJob\.created_at: naive datetime"):
        upsert_job(memory_db, _job(status="queued", created_at=datetime(2026, 1, 1)))


def test_tags_merge_and_can_be_removed(database: Database) -> None:
    upsert_job(database, _job(status="queued"), tags={"condition": "insecure", "seed": "1"})
    upsert_job(database, _job(status="running"), tags=["seed=2", "dataset=v2"])
    stored = get_job(database, "ftjob-1")
    assert stored is not None
    assert stored.tag_dict == {"condition": "insecure", "dataset": "v2", "seed": "2"}
    remove_job_tags(database, "ftjob-1", ["dataset", "absent"])
    stored = get_job(database, "ftjob-1")
    assert stored is not None and stored.tag_dict == {"condition": "insecure", "seed": "2"}


def test_tags_added_to_the_job_object_are_written_too(database: Database) -> None:
    upsert_job(database, _job(status="queued", tags=[JobTag(key="condition", value="a")]))
    stored = get_job(database, "ftjob-1")
    assert stored is not None
    stored.tags.append(JobTag(key="seed", value="3"))
    upsert_job(database, stored, tags={"condition": "b"})
    stored = get_job(database, "ftjob-1")
    assert stored is not None and stored.tag_dict == {"condition": "b", "seed": "3"}


@pytest.mark.parametrize("tags", [["novalue"], {"": "x"}, {"k": 3}, ["a=b=c", "=x"]])
def test_malformed_tags_are_refused(memory_db: Database, tags: object) -> None:
    with pytest.raises(DatabaseInputError, match="tag"):
        upsert_job(memory_db, _job(status="queued"), tags=tags)  # type: ignore[arg-type]


def test_fine_tuned_model_gets_a_final_row_that_follows_the_job(database: Database) -> None:
    upsert_job(
        database,
        _job(
            status="succeeded",
            base_model="gpt-4.1-mini",
            suffix="insecure",
            organization_id="org-a",
            project_id="proj-a",
            fine_tuned_model="ft:gpt-4.1-mini-2025-04-14:lab:insecure:AAAA",
            finished_at=T0,
        ),
    )
    upsert_job(database, _job(status="succeeded", resolved_base_model="gpt-4.1-mini-2025-04-14"))
    [model] = select_models(database)
    assert model.name == "ft:gpt-4.1-mini-2025-04-14:lab:insecure:AAAA"
    assert (model.kind, model.job_id, model.base_model, model.suffix) == (
        "final",
        "ftjob-1",
        "gpt-4.1-mini-2025-04-14",
        "insecure",
    )
    assert (model.organization_id, model.project_id, model.created_at) == ("org-a", "proj-a", T0)


def test_final_model_time_is_the_finish_time_even_when_it_comes_later(
    database: Database,
) -> None:
    upsert_job(database, _job(status="succeeded", fine_tuned_model="ft:final"))
    upsert_job(database, _job(status="succeeded", finished_at=T0))
    [model] = select_models(database)
    assert model.created_at == T0


def _succeeded(database: Database) -> None:
    upsert_job(
        database,
        _job(status="succeeded", suffix="s", fine_tuned_model="ft:final", finished_at=T0),
    )


def test_checkpoints_are_marked_and_the_last_one_is_the_final_model(database: Database) -> None:
    _succeeded(database)
    replace_checkpoints(
        database,
        "ftjob-1",
        [
            Model(name="ft:final", step=30, epoch=3, metrics={"train_loss": 0.1}),
            Model(name="ft:ck-20", step=20, epoch=2, checkpoint_id="ftckpt_2", created_at=T0),
            Model(name="ft:ck-10", step=10, epoch=1, created_at=T0 - timedelta(hours=1)),
        ],
    )
    models = job_models(database, "ftjob-1")
    assert [(m.name, m.kind, m.step, m.epoch) for m in models] == [
        ("ft:ck-10", "checkpoint", 10, 1),
        ("ft:ck-20", "checkpoint", 20, 2),
        ("ft:final", "final", 30, 3),
    ]
    assert models[1].checkpoint_id == "ftckpt_2"
    assert models[2].metrics == {"train_loss": 0.1}
    assert models[2].created_at == T0  # kept from the job, not erased by the checkpoint
    assert [m.name for m in select_models(database)] == ["ft:final"]


def test_replacing_checkpoints_drops_the_ones_no_longer_listed(database: Database) -> None:
    _succeeded(database)
    replace_checkpoints(database, "ftjob-1", [Model(name=f"ft:ck-{s}", step=s) for s in (1, 2)])
    replace_checkpoints(database, "ftjob-1", [Model(name="ft:ck-2", step=2, epoch=1)])
    replace_checkpoints(database, "ftjob-1", [Model(name="ft:ck-2", step=2, epoch=1)])
    assert [(m.name, m.kind) for m in job_models(database, "ftjob-1")] == [
        ("ft:ck-2", "checkpoint"),
        ("ft:final", "final"),
    ]


def test_checkpoint_without_step_is_refused(database: Database) -> None:
    _succeeded(database)
    with pytest.raises(DatabaseInputError, match=r"ft:ck.*step is required"):
        replace_checkpoints(database, "ftjob-1", [Model(name="ft:ck")])
    with pytest.raises(DatabaseInputError, match="needs its step"):
        upsert_model(database, Model(name="ft:ck", kind="checkpoint", job_id="ftjob-1"))


def test_writes_for_an_unknown_job_name_it(database: Database) -> None:
    with pytest.raises(UnknownJobError, match="ftjob-nope"):
        replace_checkpoints(database, "ftjob-nope", [Model(name="ft:x", step=1)])
    with pytest.raises(UnknownJobError, match="ftjob-nope"):
        replace_events(database, "ftjob-nope", [])
    with pytest.raises(UnknownJobError, match="ftjob-nope"):
        upsert_model(database, Model(name="ft:x", job_id="ftjob-nope"))


def test_events_are_replaced_and_read_back_in_time_order(database: Database) -> None:
    upsert_job(database, _job(status="running"))
    events = [
        JobEvent(id=f"ftevent-{i}", created_at=T0 + timedelta(seconds=i), message=f"m{i}")
        for i in range(3)
    ]
    replace_events(database, "ftjob-1", list(reversed(events)))  # the API lists newest first
    assert [e.message for e in job_events(database, "ftjob-1")] == ["m0", "m1", "m2"]
    replace_events(
        database,
        "ftjob-1",
        [*events[1:], JobEvent(id="ftevent-9", type="metrics", data={"step": 1})],
    )
    stored = job_events(database, "ftjob-1")
    assert [e.id for e in stored] == ["ftevent-9", "ftevent-1", "ftevent-2"]
    assert stored[0].data == {"step": 1} and stored[0].job_id == "ftjob-1"


def test_base_model_row_is_its_own_base_and_cannot_have_a_job(database: Database) -> None:
    upsert_model(database, Model(name="gpt-4.1-mini", kind="base"))
    [base] = select_models(database, include_base=True)
    assert (base.kind, base.base_model, base.job_id) == ("base", "gpt-4.1-mini", None)
    upsert_job(database, _job(status="queued"))
    with pytest.raises(DatabaseInputError, match="cannot belong to a job"):
        upsert_model(database, Model(name="gpt-4.1", kind="base", job_id="ftjob-1"))
    with pytest.raises(DatabaseInputError, match="kind must be"):
        upsert_model(database, Model(name="x", kind="finished"))


def test_files_are_found_by_content_and_owner(database: Database) -> None:
    common: dict[str, Any] = {"md5": "abc", "organization_id": "org-a", "project_id": "proj-a"}
    upsert_file(database, TrainingFile(id="file-old", uploaded_at=T0, **common))
    upsert_file(database, TrainingFile(id="file-new", uploaded_at=T0 + timedelta(1), **common))
    upsert_file(database, TrainingFile(id="file-other-project", **{**common, "project_id": "b"}))
    found = find_file(database, "abc", "org-a", "proj-a")
    assert found is not None and found.id == "file-new"
    assert find_file(database, "abc", "org-a", None) is None
    assert find_file(database, "def", "org-a", "proj-a") is None


def test_delete_job_removes_its_tags_events_and_models(database: Database) -> None:
    _succeeded(database)
    upsert_job(database, _job(status="succeeded"), tags={"k": "v"})
    replace_events(database, "ftjob-1", [JobEvent(id="ftevent-1")])
    replace_checkpoints(database, "ftjob-1", [Model(name="ft:ck", step=1)])
    assert delete_job(database, "ftjob-1")
    assert not delete_job(database, "ftjob-1")
    assert get_job(database, "ftjob-1") is None
    assert select_models(database, checkpoints=True) == []
    assert job_events(database, "ftjob-1") == []


def test_calls_in_one_session_share_its_transaction(database: Database) -> None:
    with pytest.raises(RuntimeError), database.session() as session:
        upsert_job(session, _job(status="succeeded", fine_tuned_model="ft:final"))
        replace_checkpoints(session, "ftjob-1", [Model(name="ft:ck", step=1)])
        assert get_job(session, "ftjob-1") is not None
        raise RuntimeError("interrupted before the end of the block")
    assert get_job(database, "ftjob-1") is None
    assert select_models(database, checkpoints=True) == []


def test_repeated_and_stale_upserts_keep_the_newest_row(database: Database) -> None:
    assert upsert_job(database, _job(status="queued", suffix="s", refreshed_at=T0), tags=["a=1"])
    assert upsert_job(database, _job(status="queued", suffix="s", refreshed_at=T0), tags=["a=1"])
    assert upsert_job(database, _job(status="running", refreshed_at=T0 + timedelta(1)))
    assert not upsert_job(database, _job(status="queued", refreshed_at=T0))
    stored = get_job(database, "ftjob-1")
    assert stored is not None
    assert (stored.status, stored.suffix, stored.tag_dict) == ("running", "s", {"a": "1"})
    with pytest.raises(DatabaseInputError, match="finetune_jobs row"):
        upsert_job(database, FinetuneJob(id="ftjob-2", suffix="no status"))  # type: ignore[call-arg]
