"""Batch records on SQLite and PostgreSQL: a sample goes into one batch only; the holder of
a sample is found; ending a record frees its samples; one process collects a batch, another
takes over when its lease is over."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.cache import BatchLine, BatchRecord, BatchRecords, Cache, new_record_id


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def records(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BatchRecords]:
    sqlite = request.param == "sqlite"
    cache = Cache(tmp_path / "cache" if sqlite else request.getfixturevalue("postgres_url"))
    try:
        yield cache.batches
    finally:
        cache.close()


def _record(owner: str = "a") -> BatchRecord:
    return BatchRecord(
        new_record_id(), "http://x/v1|OPENAI_API_KEY||", "http://x/v1", "m", "q", owner=owner
    )


LINES = [BatchLine("l0", "k1", (0, 1, 2)), BatchLine("l1", "k2", (0,), logprobs=True)]


def test_a_sample_goes_into_one_batch_only(records: BatchRecords) -> None:
    first = _record()
    assert records.claim(first, [BatchLine("l0", "k1", (0, 1))], 300) == [
        BatchLine("l0", "k1", (0, 1))
    ]
    second = _record("b")
    got = records.claim(second, LINES, 300)
    assert got == [BatchLine("l0", "k1", (2,)), BatchLine("l1", "k2", (0,), logprobs=True)]
    assert records.covering([("k1", 0), ("k1", 2), ("k2", 0), ("k3", 0)]) == {
        ("k1", 0): first.id,
        ("k1", 2): second.id,
        ("k2", 0): second.id,
    }
    held = records.get(second.id)
    assert held is not None and (held.state, held.requests, held.samples) == ("submitting", 2, 2)
    assert records.lines(second.id) == got


def test_a_claim_that_gets_nothing_leaves_no_record(records: BatchRecords) -> None:
    records.claim(_record(), LINES, 300)
    loser = _record("b")
    assert records.claim(loser, LINES, 300) == []
    assert records.get(loser.id) is None
    assert len(records.records(active_only=True)) == 1


def test_ending_a_record_frees_its_samples_and_keeps_its_row(records: BatchRecords) -> None:
    record = _record()
    records.claim(record, LINES, 300)
    records.submitted(record.id, "file-1", "batch_1", "validating")
    records.unclaim(record.id, [("k1", 2)])
    assert set(records.covering([("k1", 0), ("k1", 2)])) == {("k1", 0)}
    records.finish(record.id, "collected", "done")
    assert records.covering([("k1", 0), ("k2", 0)]) == {}
    ended = records.get(record.id)
    assert ended is not None and (ended.state, ended.batch_id, ended.message) == (
        "collected",
        "batch_1",
        "done",
    )
    assert records.records(active_only=True) == []
    assert [r.id for r in records.records()] == [record.id]
    again = _record("b")
    assert records.claim(again, LINES, 300) == LINES


def test_one_process_collects_a_batch_and_another_takes_over_after_its_lease(
    records: BatchRecords,
) -> None:
    record = _record()
    records.claim(record, LINES, 300)
    assert not records.start_collecting(record.id, "a", 60)  # not submitted yet
    records.submitted(record.id, "file-1", "batch_1", "completed")
    assert records.start_collecting(record.id, "a", -1)  # a lease already over
    assert records.start_collecting(record.id, "b", 60)
    assert not records.start_collecting(record.id, "c", 60)


def test_letting_go_ends_a_submitting_lease_now(records: BatchRecords) -> None:
    record = _record()
    records.claim(record, LINES, 300)
    held = records.get(record.id)
    assert held is not None and held.lease_until > records.now() + 200
    records.let_go(record.id)
    held = records.get(record.id)
    assert held is not None and held.lease_until < records.now()


def test_an_output_line_is_read_by_its_status_whether_written_as_200_or_200_0() -> None:
    """A JSON writer may spell the status as a float; the line is still an answer."""
    from evals.runner._batch_files import read_results

    body = {"choices": [{"message": {"content": "hi"}}]}
    lines = [
        {"custom_id": "a", "response": {"status_code": 200, "body": body}},
        {"custom_id": "b", "response": {"status_code": 200.0, "body": body}},
        {"custom_id": "c", "response": {"status_code": 429.0, "body": {"error": {"code": "x"}}}},
        {"custom_id": "d", "response": {"status_code": True, "body": body}},
    ]
    results = read_results("\n".join(json.dumps(line) for line in lines).encode())
    assert results["a"].body == body and results["b"].body == body
    assert (results["c"].status, results["c"].retryable) == (429, True)
    assert results["d"].body is None and results["d"].status is None
