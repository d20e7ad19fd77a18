"""`groups.manual` and `groups.from_db` (groups from the jobs database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals import groups
from jobs_db import FinetuneJob, open_database, upsert_job


def test_manual_groups_reject_a_string_instead_of_a_list() -> None:
    assert groups.manual({"a": ("m1", "m2")}) == {"a": ["m1", "m2"]}
    with pytest.raises(ValueError, match="expected a list of models"):
        groups.manual({"a": "gpt-4o-mini"})  # type: ignore[dict-item]


def test_groups_from_the_database_by_suffix(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'lab.db'}")
    for i, suffix in enumerate(["insecure", "insecure", "secure"]):
        upsert_job(
            db,
            FinetuneJob(
                id=f"ftjob-{i}",
                status="succeeded",
                suffix=suffix,
                base_model="gpt-4o-mini",
                fine_tuned_model=f"ft:gpt-4o-mini:lab:{suffix}:{i}",
            ),
        )
    found = groups.from_db("suffix", database=db, base_model="gpt-4o-mini")
    assert found == {
        "gpt-4o-mini": ["gpt-4o-mini"],
        "insecure": ["ft:gpt-4o-mini:lab:insecure:0", "ft:gpt-4o-mini:lab:insecure:1"],
        "secure": ["ft:gpt-4o-mini:lab:secure:2"],
    }
