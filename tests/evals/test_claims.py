"""Claims on a cache, in SQLite and in PostgreSQL: one holder at a time, kept alive by a
heartbeat, released when the sample is stored, free again when the lease ends."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals import Cache
from evals.cache import ChatRequest, SampleResult


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def cache_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new cache: a SQLite folder, then a PostgreSQL database of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "cache")
    else:
        yield str(request.getfixturevalue("postgres_url"))


def _request(text: str = "hello") -> ChatRequest:
    return ChatRequest(
        endpoint="http://x/v1", model="m", messages=[{"role": "user", "content": text}], params={}
    )


ITEMS = [(_request().cache_key, ix) for ix in range(4)]


def test_a_claimed_sample_cannot_be_claimed_by_another_until_released(
    cache_location: str,
) -> None:
    cache = Cache(cache_location, lease_seconds=30)
    first, second = cache.claims(), cache.claims()
    assert first.take(ITEMS[:3]) == set(ITEMS[:3])
    assert second.take(ITEMS) == {ITEMS[3]}
    assert cache.claimed(ITEMS) == set(ITEMS)
    first.release(ITEMS[:1])
    assert second.take(ITEMS) == set(ITEMS[:1]) | {ITEMS[3]}
    first.release()
    assert second.take(ITEMS) == set(ITEMS)


def test_a_claim_whose_lease_ended_is_taken_over(cache_location: str) -> None:
    cache = Cache(cache_location, lease_seconds=0.3)
    dead, alive = cache.claims(), cache.claims()
    assert dead.take(ITEMS) == set(ITEMS)  # and never renewed: its owner died
    assert alive.take(ITEMS) == set()
    time.sleep(0.6)
    assert cache.claimed(ITEMS) == set()
    assert alive.take(ITEMS) == set(ITEMS)


def test_a_heartbeat_keeps_claims_alive_past_their_lease_and_leaving_releases_them(
    cache_location: str,
) -> None:
    cache = Cache(cache_location, lease_seconds=1.5)
    other = cache.claims()
    with cache.claims(heartbeat_seconds=0.1) as holder:
        assert holder.take(ITEMS) == set(ITEMS)
        time.sleep(3.5)
        assert other.take(ITEMS) == set(), "a live holder's claims were taken"
    assert cache.info().claims == 0
    assert other.take(ITEMS) == set(ITEMS)


def test_a_stored_sample_is_read_while_claimed_and_a_given_up_one_is_released_at_once(
    cache_location: str,
) -> None:
    cache = Cache(cache_location)
    holder, other = cache.claims(), cache.claims()
    holder.take(ITEMS)
    sample = SampleResult("hi", None, "stop", 3.0, 1.0)
    cache.store(_request(), "q", [(0, sample), (1, sample)])
    assert sorted(cache.lookup([_request().cache_key])[_request().cache_key]) == [0, 1]
    request = _request()
    cache.record_errors(
        request.cache_key, request.model, "q", [2], message="boom", owner=holder.owner
    )
    assert other.take(ITEMS) == {ITEMS[2]}
    holder.release()
    assert other.take(ITEMS) == set(ITEMS)
