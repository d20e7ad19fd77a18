"""Runner parts without a server: error classes and the adaptive limit."""

from __future__ import annotations

import asyncio

import httpx2
import openai
import pytest

from evals.runner import AdaptiveLimit, FailureKind, classify


def _status_error(
    status: int, code: str | None, headers: dict[str, str] | None = None
) -> Exception:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    body = {"message": "msg", "type": code or "server_error", "code": code, "param": None}
    response = httpx2.Response(status, json={"error": body}, headers=headers, request=request)
    client = openai.OpenAI(api_key="sk-test-alpha", base_url="http://127.0.0.1/v1")
    return client._make_status_error("msg", body=body, response=response)


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (429, "rate_limit_exceeded", FailureKind.RETRY),
        (429, "insufficient_quota", FailureKind.STOP),
        (500, None, FailureKind.RETRY),
        (503, None, FailureKind.RETRY),
        (404, "model_not_found", FailureKind.MODEL),
        (403, "permission_denied", FailureKind.MODEL),
        (400, "context_length_exceeded", FailureKind.SAMPLE),
        (400, "content_filter", FailureKind.SAMPLE),
    ],
)
def test_status_errors_are_classified(status: int, code: str | None, kind: FailureKind) -> None:
    assert classify(_status_error(status, code)).kind is kind


def test_retry_after_ms_is_read_from_a_429() -> None:
    failure = classify(_status_error(429, "rate_limit_exceeded", {"retry-after-ms": "250"}))
    assert failure.rate_limited and failure.retry_after == pytest.approx(0.25)


def test_timeouts_and_dropped_connections_are_retried() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    assert classify(openai.APITimeoutError(request=request)).kind is FailureKind.RETRY
    assert classify(openai.APIConnectionError(request=request)).kind is FailureKind.RETRY


def test_the_limit_is_cut_once_per_burst_of_429s_and_grows_while_healthy() -> None:
    limit = AdaptiveLimit(10, maximum=20, cooldown=60)
    limit.rate_limited(None)
    limit.rate_limited(None)
    assert limit.limit == 7 and limit.cuts == 1
    for _ in range(7):
        limit.succeeded()
    assert limit.limit == 8


def test_waiters_get_slots_as_they_free_up() -> None:
    async def scenario() -> int:
        limit = AdaptiveLimit(2, maximum=2)
        peak = 0

        async def job() -> None:
            nonlocal peak
            await limit.acquire()
            peak = max(peak, limit.in_flight)
            await asyncio.sleep(0.001)
            limit.release()

        await asyncio.gather(*(job() for _ in range(10)))
        assert limit.in_flight == 0
        return peak

    assert asyncio.run(scenario()) == 2
