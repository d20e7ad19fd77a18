"""Training curves stored once per job, and models deleted on the API leaving their groups."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jobs_db import (
    Database,
    DatabaseInputError,
    FinetuneJob,
    Model,
    TrainingCurve,
    delete_job,
    job_curves,
    jobs_missing_curves,
    mark_model_deleted,
    model_groups,
    replace_checkpoints,
    select_models,
    store_curve,
    upsert_job,
)

T0 = datetime(2026, 4, 1, tzinfo=UTC)
HEADER = ["step", "train_loss", "train_accuracy", "valid_loss", "valid_mean_token_accuracy"]


def _succeeded(db: Database, job_id: str, *, result_file: str | None, seed: int = 1) -> None:
    upsert_job(
        db,
        FinetuneJob(
            id=job_id,
            status="succeeded",
            base_model="gpt-4.1-mini",
            suffix="insecure",
            fine_tuned_model=f"ft:gpt-4.1-mini:lab:insecure:{job_id[-3:]}",
            result_file_id=result_file,
            finished_at=T0,
            created_at=T0,
        ),
        tags={"condition": "insecure", "seed": str(seed)},
    )


def test_curves_are_stored_once_per_job_and_read_back_by_job(database: Database) -> None:
    _succeeded(database, "ftjob-aaa", result_file="file-r1")
    _succeeded(database, "ftjob-bbb", result_file="file-r2", seed=2)
    upsert_job(database, FinetuneJob(id="ftjob-run", status="running"))
    assert [job.id for job in jobs_missing_curves(database)] == ["ftjob-aaa", "ftjob-bbb"]

    rows: list[list[float | None]] = [[1, 2.1, 0.4, None, None], [2, 1.7, 0.5, 1.9, 0.45]]
    store_curve(
        database,
        TrainingCurve(
            job_id="ftjob-aaa", file_id="file-r1", header=HEADER, rows=rows, downloaded_at=T0
        ),
    )
    assert [job.id for job in jobs_missing_curves(database)] == ["ftjob-bbb"]
    stored = job_curves(database, ["ftjob-aaa", "ftjob-bbb"])
    assert list(stored) == ["ftjob-aaa"]
    assert stored["ftjob-aaa"].header == HEADER and stored["ftjob-aaa"].rows == rows

    # A job whose results file changed (a new file id) needs its curves read again.
    upsert_job(database, FinetuneJob(id="ftjob-aaa", result_file_id="file-r9"))
    assert [job.id for job in jobs_missing_curves(database)] == ["ftjob-aaa", "ftjob-bbb"]
    store_curve(
        database, TrainingCurve(job_id="ftjob-aaa", file_id="file-r9", header=HEADER, rows=[])
    )
    assert job_curves(database)["ftjob-aaa"].rows == []

    assert delete_job(database, "ftjob-aaa")
    assert list(job_curves(database)) == []


@pytest.mark.parametrize(
    ("header", "rows", "message"),
    [
        (["train_loss", "step"], [[1.0, 1]], "first column must be 'step'"),
        (HEADER, [[1, 2.0]], "row 1 has 2 values for 5 columns"),
    ],
)
def test_malformed_curves_are_refused_naming_the_job(
    database: Database, header: list[str], rows: list[list[float | None]], message: str
) -> None:
    _succeeded(database, "ftjob-bad", result_file="file-r")
    with pytest.raises(DatabaseInputError, match=f"ftjob-bad.*{message}"):
        store_curve(
            database, TrainingCurve(job_id="ftjob-bad", file_id="f", header=header, rows=rows)
        )
    with pytest.raises(DatabaseInputError, match="ftjob-nope"):
        store_curve(
            database, TrainingCurve(job_id="ftjob-nope", file_id="f", header=HEADER, rows=[])
        )


def test_deleted_models_leave_queries_and_groups_unless_asked_for(database: Database) -> None:
    _succeeded(database, "ftjob-111", result_file=None, seed=1)
    _succeeded(database, "ftjob-222", result_file=None, seed=2)
    replace_checkpoints(
        database,
        "ftjob-111",
        [Model(name="ft:gpt-4.1-mini:lab:insecure:X:ckpt-step-10", step=10)],
    )
    gone = "ft:gpt-4.1-mini:lab:insecure:111"
    kept = "ft:gpt-4.1-mini:lab:insecure:222"
    assert mark_model_deleted(database, gone, T0)
    assert not mark_model_deleted(database, "ft:never-recorded", T0)

    assert [m.name for m in select_models(database)] == [kept]
    assert {m.name for m in select_models(database, include_deleted=True)} == {gone, kept}
    assert model_groups(database, by="tag:condition", include_base=False) == {"insecure": [kept]}
    assert model_groups(database, by=lambda m: m.suffix, include_base=False) == {"insecure": [kept]}
    with_deleted = model_groups(database, include_base=False, include_deleted=True)
    assert sorted(with_deleted["insecure"]) == sorted([gone, kept])
    # The checkpoints of a job whose final model was deleted stay usable.
    checkpoints = select_models(database, checkpoints="only")
    assert [m.name for m in checkpoints] == ["ft:gpt-4.1-mini:lab:insecure:X:ckpt-step-10"]
    [deleted] = [m for m in select_models(database, include_deleted=True) if m.name == gone]
    assert deleted.deleted_at == T0
