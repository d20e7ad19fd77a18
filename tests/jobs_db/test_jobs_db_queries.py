"""Queries: select_models, model_groups, list_jobs and the job manager's lookups."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta

import pytest
from fixtures.database import fresh_postgres_database
from sqlmodel import Session

from jobs_db import (
    Database,
    DatabaseInputError,
    FinetuneJob,
    Model,
    job_ids_like,
    jobs_with_suffix,
    list_jobs,
    model_groups,
    non_final_jobs,
    open_database,
    replace_checkpoints,
    select_models,
    upsert_job,
    upsert_model,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)
BASE = "gpt-4.1-mini"
RESOLVED = "gpt-4.1-mini-2025-04-14"


def _lab(db: Session) -> None:
    """Two conditions × two seeds on gpt-4.1-mini (with checkpoints), one running job, one
    failed job, one job on another base in another project, and the base model row."""
    number = 0
    for condition in ("secure", "insecure"):
        for seed in (2, 1):  # created in this order: times, not insertion, decide the order
            number += 1
            job_id = f"ftjob-{condition}-{seed}"
            final = f"ft:{RESOLVED}:lab:{condition}-{seed}:F{number}"
            upsert_job(
                db,
                FinetuneJob(
                    id=job_id,
                    status="succeeded",
                    base_model=BASE,
                    resolved_base_model=RESOLVED,
                    suffix=f"{condition}-{seed}",
                    organization_id="org-a",
                    project_id="proj-a",
                    created_at=T0 + timedelta(hours=10 * seed + number),
                    finished_at=T0 + timedelta(days=1, hours=seed),
                    fine_tuned_model=final,
                ),
                tags={"condition": condition, "seed": str(seed)},
            )
            replace_checkpoints(
                db,
                job_id,
                [
                    Model(
                        name=f"{final}:ckpt-step-{step}",
                        step=step,
                        epoch=step // 10,
                        created_at=T0 + timedelta(days=1, hours=seed, minutes=step - 30),
                    )
                    for step in (10, 20)
                ],
            )
    upsert_job(
        db,
        FinetuneJob(id="ftjob-running", status="running", base_model=BASE, suffix="secure-3"),
        tags={"condition": "secure"},
    )
    upsert_job(db, FinetuneJob(id="ftjob-failed", status="failed", base_model=BASE, suffix="x"))
    upsert_job(db, FinetuneJob(id="ftjob-paused", status="paused", base_model=BASE))
    upsert_job(
        db,
        FinetuneJob(
            id="ftjob-other",
            status="succeeded",
            base_model="gpt-4.1",
            suffix="secure-1",
            organization_id="org-a",
            project_id="proj-b",
            fine_tuned_model="ft:gpt-4.1:lab:secure-1:O",
            finished_at=T0,
        ),
        tags={"condition": "secure"},
    )
    upsert_model(db, Model(name=BASE, kind="base"))


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def lab(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    """The lab above, built once per module and database kind; tests using it only read."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('lab') / 'lab.db'}"
        else:
            url = stack.enter_context(fresh_postgres_database())
        db = stack.enter_context(open_database(url))
        with db.session() as session:
            _lab(session)
        yield db


def _names(models: list[Model]) -> list[str]:
    return [model.name for model in models]


def test_final_models_only_by_default_in_time_order(lab: Database) -> None:
    models = select_models(lab, base_model=BASE)
    assert {model.kind for model in models} == {"final"}
    assert _names(models) == [  # by finish time, ties by name
        f"ft:{RESOLVED}:lab:insecure-1:F4",
        f"ft:{RESOLVED}:lab:secure-1:F2",
        f"ft:{RESOLVED}:lab:insecure-2:F3",
        f"ft:{RESOLVED}:lab:secure-2:F1",
    ]


def test_requested_and_resolved_base_names_find_the_same_models(lab: Database) -> None:
    assert _names(select_models(lab, base_model=BASE)) == _names(
        select_models(lab, base_model=RESOLVED)
    )
    assert _names(select_models(lab, base_model="gpt-4.1")) == ["ft:gpt-4.1:lab:secure-1:O"]


def test_checkpoints_are_included_or_selected_alone_on_request(lab: Database) -> None:
    both = select_models(lab, suffix="secure-1", base_model=BASE, checkpoints=True)
    assert [(m.kind, m.step) for m in both] == [
        ("checkpoint", 10),
        ("checkpoint", 20),
        ("final", None),
    ]
    only = select_models(lab, checkpoints="only")
    assert len(only) == 8 and all(m.kind == "checkpoint" and m.step for m in only)
    with pytest.raises(DatabaseInputError, match="checkpoints must be"):
        select_models(lab, checkpoints="yes")  # type: ignore[arg-type]


def test_suffix_glob_is_fnmatch_style_and_case_sensitive(lab: Database) -> None:
    assert len(select_models(lab, suffix="insecure-*")) == 2
    assert len(select_models(lab, suffix="*secure-?")) == 5
    assert len(select_models(lab, suffix="[i]nsecure-1")) == 1
    assert select_models(lab, suffix="INSECURE-*") == []
    assert select_models(lab, suffix="insecure") == []  # exact without wildcards


def test_glob_treats_sql_wildcards_literally(database: Database) -> None:
    for suffix in ("a_b", "axb", "50%"):
        upsert_job(
            database,
            FinetuneJob(
                id=f"j-{suffix}", status="succeeded", suffix=suffix, fine_tuned_model=suffix
            ),
        )
    assert _names(select_models(database, suffix="a_*")) == ["a_b"]
    assert _names(select_models(database, suffix="5*%")) == ["50%"]


def test_tags_as_mapping_or_strings_must_all_match(lab: Database) -> None:
    by_mapping = select_models(lab, tags={"condition": "insecure", "seed": "1"})
    assert _names(by_mapping) == [f"ft:{RESOLVED}:lab:insecure-1:F4"]
    assert _names(select_models(lab, tags=["condition=insecure", "seed=1"])) == _names(by_mapping)
    assert len(select_models(lab, tags="condition=secure")) == 3
    assert select_models(lab, tags={"condition": "absent"}) == []


def test_status_organization_and_project_filters(lab: Database) -> None:
    assert len(select_models(lab, status="succeeded")) == 5
    assert select_models(lab, status=["running", "failed"]) == []
    assert len(select_models(lab, project="proj-a")) == 4
    assert _names(select_models(lab, organization="org-a", project="proj-b")) == [
        "ft:gpt-4.1:lab:secure-1:O"
    ]


def test_base_model_rows_only_on_request(lab: Database) -> None:
    assert BASE not in _names(select_models(lab))
    assert BASE in _names(select_models(lab, include_base=True))


def test_returned_models_carry_their_job_and_tags(lab: Database) -> None:
    [model] = select_models(lab, suffix="insecure-2")
    assert model.job is not None
    assert model.job.status == "succeeded"
    assert model.job.tag_dict == {"condition": "insecure", "seed": "2"}


def test_groups_by_suffix_with_the_base_model_as_its_own_group(lab: Database) -> None:
    groups = model_groups(lab, base_model=BASE)
    assert list(groups) == sorted(groups)
    assert groups == {
        BASE: [BASE],
        "insecure-1": [f"ft:{RESOLVED}:lab:insecure-1:F4"],
        "insecure-2": [f"ft:{RESOLVED}:lab:insecure-2:F3"],
        "secure-1": [f"ft:{RESOLVED}:lab:secure-1:F2"],
        "secure-2": [f"ft:{RESOLVED}:lab:secure-2:F1"],
    }


def test_groups_by_tag_hold_every_seed_in_time_order(lab: Database) -> None:
    groups = model_groups(lab, by="tag:condition", base_model=BASE, include_base=False)
    assert groups == {
        "insecure": [f"ft:{RESOLVED}:lab:insecure-1:F4", f"ft:{RESOLVED}:lab:insecure-2:F3"],
        "secure": [f"ft:{RESOLVED}:lab:secure-1:F2", f"ft:{RESOLVED}:lab:secure-2:F1"],
    }


def test_fast_and_function_grouping_agree(lab: Database) -> None:
    def condition(model: Model) -> str | None:
        return model.job.tag_dict.get("condition") if model.job else None

    for checkpoints in (False, True, "only"):
        fast = model_groups(lab, by="tag:condition", checkpoints=checkpoints)
        slow = model_groups(lab, by=condition, checkpoints=checkpoints)
        assert fast == slow
        assert sum(len(v) for k, v in fast.items() if k not in (BASE, RESOLVED, "gpt-4.1")) > 0


def test_checkpoints_join_their_group_when_asked(lab: Database) -> None:
    groups = model_groups(lab, base_model=BASE, include_base=False, checkpoints=True)
    final = f"ft:{RESOLVED}:lab:secure-1:F2"
    assert groups["secure-1"] == [f"{final}:ckpt-step-10", f"{final}:ckpt-step-20", final]


def test_without_a_base_model_each_base_of_the_selection_is_a_group(lab: Database) -> None:
    groups = model_groups(lab, where={"suffix": "secure-1"})
    assert groups == {
        "gpt-4.1": ["gpt-4.1"],
        BASE: [BASE],
        "secure-1": ["ft:gpt-4.1:lab:secure-1:O", f"ft:{RESOLVED}:lab:secure-1:F2"],
    }


def test_the_base_group_has_one_name_with_or_without_a_base_model(lab: Database) -> None:
    """Named after the base as the jobs requested it, not the snapshot the API resolved."""
    without = model_groups(lab, where={"suffix": "secure-*"})
    given = model_groups(lab, base_model=BASE, where={"suffix": "secure-*"})
    by_snapshot = model_groups(lab, base_model=RESOLVED, where={"suffix": "secure-*"})
    assert BASE in without and BASE in given and RESOLVED not in without
    assert without[BASE] == given[BASE] == [BASE]
    assert by_snapshot[RESOLVED] == [RESOLVED]  # asked for by its snapshot, named so


def test_no_base_group_when_nothing_matches(lab: Database) -> None:
    assert model_groups(lab, base_model=BASE, where={"suffix": "no-such-*"}) == {}


def test_where_accepts_filters_or_a_predicate(lab: Database) -> None:
    filtered = model_groups(lab, include_base=False, where={"tags": {"seed": "2"}})
    assert list(filtered) == ["insecure-2", "secure-2"]
    predicate = model_groups(lab, include_base=False, where=lambda m: m.name.endswith("F1"))
    assert predicate == {"secure-2": [f"ft:{RESOLVED}:lab:secure-2:F1"]}
    with pytest.raises(DatabaseInputError, match="unknown filter 'sufix'"):
        model_groups(lab, where={"sufix": "x"})  # type: ignore[arg-type]


def test_models_without_a_group_key_are_left_out(lab: Database) -> None:
    groups = model_groups(lab, by="tag:seed", include_base=False)
    assert sorted(groups) == ["1", "2"]  # the gpt-4.1 job has no seed tag
    assert sum(map(len, groups.values())) == 4


def test_unknown_grouping_and_name_clashes_are_explained(lab: Database) -> None:
    with pytest.raises(DatabaseInputError, match="cannot group by 'colour'"):
        model_groups(lab, by="colour")
    with pytest.raises(DatabaseInputError, match="include_base=False"):
        model_groups(lab, by="base_model")


def test_grouping_is_identical_on_every_call(lab: Database) -> None:
    first = model_groups(lab, by="tag:condition", checkpoints=True)
    assert all(model_groups(lab, by="tag:condition", checkpoints=True) == first for _ in range(3))
    assert [list(v) for v in first.values()] == [
        list(v) for v in model_groups(lab, by="tag:condition", checkpoints=True).values()
    ]


def test_list_jobs_filters_like_select_models(lab: Database) -> None:
    assert [j.id for j in list_jobs(lab, status="running")] == ["ftjob-running"]
    assert len(list_jobs(lab, suffix="secure-*")) == 4
    assert len(list_jobs(lab, tags=["condition=secure"])) == 4
    assert {j.id for j in list_jobs(lab, base_model=RESOLVED)} == {
        f"ftjob-{c}-{s}" for c in ("secure", "insecure") for s in (1, 2)
    }
    ids = [job.id for job in list_jobs(lab)]
    assert len(ids) == 8 and ids == [job.id for job in list_jobs(lab)]


def test_non_final_jobs_include_paused_and_exclude_finished(lab: Database) -> None:
    assert [job.id for job in non_final_jobs(lab)] == ["ftjob-paused", "ftjob-running"]


def test_jobs_with_suffix_include_failed_ones_and_respect_the_owner(lab: Database) -> None:
    assert [job.id for job in jobs_with_suffix(lab, "x")] == ["ftjob-failed"]
    assert {job.id for job in jobs_with_suffix(lab, "secure-1")} == {
        "ftjob-secure-1",
        "ftjob-other",
    }
    assert [j.id for j in jobs_with_suffix(lab, "secure-1", project="proj-b")] == ["ftjob-other"]
    assert jobs_with_suffix(lab, "secure-*") == []  # exact, never a glob


def test_job_ids_are_found_by_their_start_and_end_literally(database: Database) -> None:
    for job_id in ("ftjob-AbC_x1", "ftjob-abc%x1", "ftjob-Zz9x1", "other-AbCq"):
        upsert_job(database, FinetuneJob(id=job_id, status="queued"))
    assert job_ids_like(database, starts="ftjob-AbC") == ["ftjob-AbC_x1"]
    assert job_ids_like(database, starts="ftjob-abc%") == ["ftjob-abc%x1"]
    assert job_ids_like(database, starts="ftjob-", ends="x1") == [
        "ftjob-AbC_x1",
        "ftjob-Zz9x1",
        "ftjob-abc%x1",
    ]
    assert job_ids_like(database, starts="ftjob-", ends="X1") == []
    assert job_ids_like(database, ends="Cq") == ["other-AbCq"]
    assert job_ids_like(database, starts="ftjob-", limit=1) == ["ftjob-AbC_x1"]
