"""Injected faults map to the SDK's exception classes; retries honour `retry-after-ms`."""

from __future__ import annotations

import time
from collections.abc import Iterator

import openai
import pytest
from openai import OpenAI

from labmgr.sandbox import SandboxHandle

MESSAGES = [{"role": "user", "content": "Hello?"}]


@pytest.fixture
def faulty(sandbox: SandboxHandle) -> Iterator[SandboxHandle]:
    """The session sandbox, its faults and counters reset afterwards."""
    sandbox.reset()
    try:
        yield sandbox
    finally:
        sandbox.reset()


def _client(sb: SandboxHandle, **kw: object) -> OpenAI:
    options: dict = {"max_retries": 0, **kw}
    return OpenAI(
        base_url=sb.base_url, api_key="sk-test", _strict_response_validation=True, **options
    )


def test_injected_429_has_real_body_and_retry_after_ms(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_429=1.0, retry_after_ms=7)
    with pytest.raises(openai.RateLimitError) as info:
        _client(faulty).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert info.value.code == "rate_limit_exceeded"
    assert info.value.response.headers["retry-after-ms"] == "7"
    assert faulty.stats()["faults_injected"] == {"429": 1}


def test_injected_500_is_internal_server_error(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_500=1.0)
    with pytest.raises(openai.InternalServerError) as info:
        _client(faulty).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert info.value.type == "server_error"


def test_dropped_connection_is_api_connection_error(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_drop=1.0)
    with pytest.raises(openai.APIConnectionError) as info:
        _client(faulty).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert not isinstance(info.value, openai.APITimeoutError)
    assert faulty.stats()["statuses"] == {"dropped": 1}


def test_dropped_stream_breaks_off_mid_way(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_drop=1.0)
    stream = _client(faulty).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, stream=True
    )
    with pytest.raises(openai.APIConnectionError):
        list(stream)


def test_held_response_is_api_timeout_error(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_timeout=1.0)
    with pytest.raises(openai.APITimeoutError):
        _client(faulty, timeout=0.3).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    deadline = time.monotonic() + 10
    while faulty.stats()["in_flight"]:  # the server notices the client leaving
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert faulty.stats()["statuses"] == {"timeout": 1}


def test_faults_leave_other_endpoints_alone(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_500=1.0)
    assert _client(faulty).models.list().data


def test_sdk_retries_every_429_and_gives_up_after_max_retries(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_429=1.0, retry_after_ms=1)
    with pytest.raises(openai.RateLimitError):
        _client(faulty, max_retries=2).chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES
        )
    stats = faulty.stats()
    assert stats["requests"]["chat.completions"] == 3
    assert stats["statuses"] == {"429": 3}


def test_retry_after_a_first_attempt_failure_succeeds(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_429=1.0, retry_after_ms=1, first_attempt_only=True)
    raw = _client(faulty, max_retries=2).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=MESSAGES
    )
    assert raw.retries_taken == 1
    assert raw.parse().choices


def test_reset_clears_faults_and_counters(faulty: SandboxHandle) -> None:
    faulty.set_faults(rate_500=1.0, latency_ms=5)
    faulty.reset()
    _client(faulty).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    stats = faulty.stats()
    assert stats["requests"] == {"chat.completions": 1}
    assert stats["statuses"] == {"200": 1}


def test_unknown_fault_setting_is_refused(faulty: SandboxHandle) -> None:
    import urllib.error

    with pytest.raises(urllib.error.HTTPError) as info:
        faulty.set_faults(rate_teapot=1.0)
    assert info.value.code == 400


def test_quota_counts_down_then_answers_insufficient_quota(faulty: SandboxHandle) -> None:
    assert faulty.set_faults(quota_requests=2)["quota_requests"] == 2
    client = _client(faulty)
    for _ in range(2):
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    client.models.list()  # not a model request: free
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)

    assert info.value.code == "insufficient_quota" and info.value.type == "insufficient_quota"
    assert "exceeded your current quota" in info.value.message
    assert faulty.stats()["faults_injected"] == {"insufficient_quota": 1}
    assert faulty.set_faults(quota_requests=None)["quota_requests"] is None
    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
