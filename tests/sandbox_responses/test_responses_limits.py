"""Enforced rate limits count responses like chat completions, in the same buckets."""

from __future__ import annotations

import json

import openai
import pytest
from fixtures.sandbox import wait_for_batch
from openai import OpenAI
from sandbox_responses.conftest import error_message

from labmgr.sandbox import SandboxHandle, run_sandbox


def _client(sb: SandboxHandle) -> OpenAI:
    return OpenAI(
        base_url=sb.base_url, api_key="sk-test", max_retries=0, _strict_response_validation=True
    )


def test_responses_and_chat_share_a_models_request_limit() -> None:
    with run_sandbox(limits={"gpt-4.1-mini": {"rpm": 3}}) as sb:
        client = _client(sb)
        client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "Hi."}]
        )
        remaining = []
        for _ in range(2):
            raw = client.responses.with_raw_response.create(model="gpt-4.1-mini", input="Hi.")
            assert raw.headers["x-ratelimit-limit-requests"] == "3"
            remaining.append(raw.headers["x-ratelimit-remaining-requests"])
        assert remaining == ["1", "0"]
        with pytest.raises(openai.RateLimitError) as info:
            client.responses.create(model="gpt-4.1-mini-2025-04-14", input="Hi.")
        assert info.value.code == "rate_limit_exceeded"
        assert error_message(info.value).startswith(
            "Rate limit reached for gpt-4.1-mini in organization org-sandbox on requests per "
            "min (RPM): Limit 3, Used 3, Requested 1."
        )
        assert "retry-after-ms" in info.value.response.headers
        assert sb.stats()["rate_limited"]  # counted like chat's


def test_a_response_costs_its_input_plus_max_output_tokens() -> None:
    with run_sandbox(limits={"gpt-5-mini": {"tpm": 2000}}) as sb:
        client = _client(sb)
        raw = client.responses.with_raw_response.create(
            model="gpt-5-mini",
            input=[{"role": "user", "content": "How do tides work?"}],
            instructions="Be brief.",
            max_output_tokens=500,
        )
        usage = raw.parse().usage
        assert usage is not None
        assert int(raw.headers["x-ratelimit-remaining-tokens"]) == 2000 - (usage.input_tokens + 500)
        with pytest.raises(openai.RateLimitError) as info:
            client.responses.create(model="gpt-5-mini", input="Hi.", max_output_tokens=100_000)
        assert error_message(info.value).startswith("Request too large for gpt-5-mini")


@pytest.mark.parametrize("stream", [False, True])
def test_without_a_budget_a_responses_output_is_counted_after_it(stream: bool) -> None:
    with run_sandbox(limits={"gpt-4.1-mini": {"tpm": 100_000}}) as sb:
        raw = _client(sb).responses.with_raw_response.create(
            model="gpt-4.1-mini", input="How do tides work?", stream=stream
        )
        if stream:
            final = list(raw.parse())[-1]  # type: ignore[call-overload]
            assert final.type == "response.completed"
            usage = final.response.usage
        else:
            usage = raw.parse().usage  # type: ignore[union-attr]
    assert usage is not None and usage.output_tokens > 0
    assert int(raw.headers["x-ratelimit-remaining-tokens"]) == (
        100_000 - usage.input_tokens - usage.output_tokens
    )


def test_a_batch_of_responses_counts_its_enqueued_tokens() -> None:
    lines = "".join(
        json.dumps(
            {
                "custom_id": f"r{i}",
                "method": "POST",
                "url": "/v1/responses",
                "body": {"model": "gpt-5-mini", "input": "Hi.", "max_output_tokens": 300},
            }
        )
        + "\n"
        for i in range(3)
    )
    with run_sandbox(limits={"gpt-5-mini": {"batch_queue_tokens": 500}}) as sb:
        client = _client(sb)
        file_id = client.files.create(file=("in.jsonl", lines.encode()), purpose="batch").id
        batch = client.batches.create(
            input_file_id=file_id, endpoint="/v1/responses", completion_window="24h"
        )
        refused = wait_for_batch(client, batch.id)
    assert refused.status == "failed"
    assert refused.errors is not None and refused.errors.data is not None
    assert refused.errors.data[0].code == "token_limit_exceeded"
