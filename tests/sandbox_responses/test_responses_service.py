"""The Responses API shares the sandbox's statistics, faults, quota and Batch API."""

from __future__ import annotations

import json

import openai
import pytest
from fixtures.sandbox import wait_for_batch
from openai import OpenAI
from openai.types.responses import Response

from labmgr.sandbox import SandboxHandle


def _client(sb: SandboxHandle, **options: object) -> OpenAI:
    return OpenAI(
        base_url=sb.base_url,
        api_key="sk-test",
        _strict_response_validation=True,
        **{"max_retries": 0, **options},  # type: ignore[arg-type]
    )


def test_stats_count_responses_per_model_and_endpoint(fresh_sandbox: SandboxHandle) -> None:
    client = _client(fresh_sandbox)
    response = client.responses.create(model="gpt-5-nano", input="Hi.")
    client.responses.create(model="gpt-5-nano", input="Hello.")
    client.chat.completions.create(
        model="gpt-5-nano", messages=[{"role": "user", "content": "Hey."}]
    )
    stats = fresh_sandbox.stats()
    assert stats["requests"]["responses.create"] == 2
    row = stats["models"]["gpt-5-nano"]
    assert row["requests"] == 3
    assert row["endpoints"] == {"chat.completions": 1, "responses.create": 2}
    assert response.usage is not None
    assert row["prompt_tokens"] >= response.usage.input_tokens
    assert row["completion_tokens"] >= response.usage.output_tokens


def test_injected_failures_reach_responses_by_default(fresh_sandbox: SandboxHandle) -> None:
    fresh_sandbox.set_faults(rate_429=1.0, retry_after_ms=5)
    with pytest.raises(openai.RateLimitError) as info:
        _client(fresh_sandbox).responses.create(model="gpt-4.1-mini", input="Hi.")
    assert info.value.code == "rate_limit_exceeded"
    assert info.value.response.headers["retry-after-ms"] == "5"
    fresh_sandbox.set_faults(rate_429=0.0, rate_500=1.0, first_attempt_only=True)
    raw = _client(fresh_sandbox, max_retries=1).responses.with_raw_response.create(
        model="gpt-4.1-mini", input="Hi."
    )
    assert raw.retries_taken == 1 and raw.parse().status == "completed"
    assert fresh_sandbox.stats()["faults_injected"] == {"429": 1, "500": 1}


def test_a_dropped_stream_fails_the_client(fresh_sandbox: SandboxHandle) -> None:
    fresh_sandbox.set_faults(rate_drop=1.0)
    with pytest.raises((openai.APIConnectionError, openai.APIError)):
        list(
            _client(fresh_sandbox).responses.create(model="gpt-4.1-mini", input="Hi.", stream=True)
        )
    assert fresh_sandbox.stats()["statuses"] == {"dropped": 1}


def test_running_out_of_credits_stops_responses_too(fresh_sandbox: SandboxHandle) -> None:
    fresh_sandbox.set_faults(quota_requests=1)
    client = _client(fresh_sandbox)
    client.responses.create(model="gpt-4.1-mini", input="Hi.")
    with pytest.raises(openai.RateLimitError) as info:
        client.responses.create(model="gpt-4.1-mini", input="Hi again.")
    assert info.value.code == "insufficient_quota"


def _line(custom_id: str, **body: object) -> str:
    line = {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/responses",
        "body": {"model": "gpt-5-mini", "input": f"Question {custom_id}?", **body},
    }
    return json.dumps(line) + "\n"


def test_a_batch_of_responses_answers_each_line(sandbox_client: OpenAI) -> None:
    text = _line("a") + _line("b", reasoning={"effort": "high"}) + _line("bad", temperature=0.2)
    file_id = sandbox_client.files.create(file=("in.jsonl", text.encode()), purpose="batch").id
    batch = sandbox_client.batches.create(
        input_file_id=file_id, endpoint="/v1/responses", completion_window="24h"
    )
    assert batch.endpoint == "/v1/responses"
    done = wait_for_batch(sandbox_client, batch.id)
    assert done.status == "completed" and done.request_counts is not None
    assert (done.request_counts.completed, done.request_counts.failed) == (2, 1)
    assert done.output_file_id and done.error_file_id
    lines = sandbox_client.files.content(done.output_file_id).text.splitlines()
    outputs = {o["custom_id"]: o["response"] for o in map(json.loads, lines)}
    responses = {k: Response.model_validate(v["body"]) for k, v in outputs.items()}
    assert set(responses) == {"a", "b"}
    assert all(r.output_text for r in responses.values())
    usages = [r.usage for r in responses.values() if r.usage is not None]
    assert done.usage is not None and len(usages) == 2
    assert done.usage.input_tokens == sum(u.input_tokens for u in usages)
    assert done.usage.output_tokens == sum(u.output_tokens for u in usages)
    reasoning = sum(u.output_tokens_details.reasoning_tokens for u in usages)
    assert done.usage.output_tokens_details.reasoning_tokens == reasoning > 0
    errors = sandbox_client.files.content(done.error_file_id).text.splitlines()
    [error] = map(json.loads, errors)
    assert error["custom_id"] == "bad" and error["response"]["status_code"] == 400
    assert error["response"]["body"]["error"]["param"] == "temperature"
