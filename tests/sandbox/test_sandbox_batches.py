"""Batches: create from an uploaded JSONL, run, output and error files, list, cancel; line
failures, true request counts, expiry, the enqueued-token and size limits."""

from __future__ import annotations

import json
import time

import openai
import pytest
from fixtures.sandbox import wait_for_batch
from openai import OpenAI
from openai.types import Batch

from labmgr.sandbox import run_sandbox


def _line(custom_id: str, **body: object) -> str:
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": custom_id}], **body}
    return (
        json.dumps(
            {
                "custom_id": custom_id,
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": request,
            }
        )
        + "\n"
    )


def _upload(client: OpenAI, text: str) -> str:
    return client.files.create(file=("batch.jsonl", text.encode()), purpose="batch").id


def test_batch_writes_answers_and_errors_by_custom_id(sandbox_client: OpenAI) -> None:
    text = _line("a") + _line("b", logprobs=True, top_logprobs=2) + _line("bad", n=0)
    batch = sandbox_client.batches.create(
        input_file_id=_upload(sandbox_client, text),
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"run": "t"},
    )
    assert batch.status == "validating"
    done = wait_for_batch(sandbox_client, batch.id)
    assert done.status == "completed"
    assert done.request_counts is not None
    assert (
        done.request_counts.total,
        done.request_counts.completed,
        done.request_counts.failed,
    ) == (3, 2, 1)
    assert done.output_file_id and done.error_file_id
    assert done.usage is not None and done.usage.total_tokens > 0
    outputs = [
        json.loads(x) for x in sandbox_client.files.content(done.output_file_id).text.splitlines()
    ]
    assert {o["custom_id"] for o in outputs} == {"a", "b"}
    assert all(o["response"]["status_code"] == 200 for o in outputs)
    assert all(o["response"]["body"]["object"] == "chat.completion" for o in outputs)
    errors = [
        json.loads(x) for x in sandbox_client.files.content(done.error_file_id).text.splitlines()
    ]
    assert [e["custom_id"] for e in errors] == ["bad"]
    assert errors[0]["response"]["status_code"] == 400
    assert sandbox_client.files.retrieve(done.output_file_id).purpose == "batch_output"


def test_batch_with_invalid_lines_fails_with_line_numbers(sandbox_client: OpenAI) -> None:
    text = _line("a") + "{not json\n" + _line("a")
    batch = sandbox_client.batches.create(
        input_file_id=_upload(sandbox_client, text),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
    done = wait_for_batch(sandbox_client, batch.id)
    assert done.status == "failed"
    assert done.errors is not None and done.errors.data is not None
    assert [(e.code, e.line) for e in done.errors.data] == [
        ("invalid_json_line", 2),
        ("duplicate_custom_id", 3),
    ]


def _raw(**fields: object) -> str:
    line = {"custom_id": "x", "method": "POST", "url": "/v1/chat/completions"}
    line["body"] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    return json.dumps({**line, **fields}) + "\n"


@pytest.mark.parametrize(
    ("text", "code", "param"),
    [
        (_raw(custom_id=7), "missing_required_parameter", "custom_id"),
        (_raw(method="GET"), "invalid_method", "method"),
        (_raw(url="/v1/embeddings"), "invalid_url", "url"),
        (_raw(body={"messages": []}), "missing_required_parameter", "body"),
        (_line("x", stream=True), "invalid_request", "body.stream"),
        (_line("a") + _line("b", model="gpt-4.1-mini"), "mismatched_model", "body.model"),
        ("\n\n", "empty_file", None),
    ],
    ids=["custom_id", "method", "url", "no model", "stream", "two models", "empty"],
)
def test_a_batch_file_the_api_would_refuse_fails_naming_the_problem(
    sandbox_client: OpenAI, text: str, code: str, param: str | None
) -> None:
    batch = sandbox_client.batches.create(
        input_file_id=_upload(sandbox_client, text),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
    done = wait_for_batch(sandbox_client, batch.id)
    assert done.status == "failed" and done.output_file_id is None
    assert done.errors is not None and done.errors.data is not None
    assert [(e.code, e.param) for e in done.errors.data] == [(code, param)]


def test_batches_list_pages_and_cancel(sandbox_client: OpenAI) -> None:
    ids = [
        sandbox_client.batches.create(
            input_file_id=_upload(sandbox_client, _line("x")),
            endpoint="/v1/chat/completions",
            completion_window="24h",
        ).id
        for _ in range(3)
    ]
    cancelled = sandbox_client.batches.cancel(ids[0])
    assert cancelled.status == "cancelling"
    assert wait_for_batch(sandbox_client, ids[0]).status == "cancelled"
    page = sandbox_client.batches.list(limit=2)
    assert [b.id for b in page.data] == ids[::-1][:2] and page.has_more
    assert [b.id for b in sandbox_client.batches.list(limit=2)][:3] == ids[::-1]


def test_unsupported_endpoint_is_400(sandbox_client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.batches.create(
            input_file_id=_upload(sandbox_client, _line("x")),
            endpoint="/v1/embeddings",
            completion_window="24h",
        )
    assert info.value.param == "endpoint"


# ---- batches like the real service: line failures, counts, expiry, cancel, limits ----


def _strict_client(base_url: str) -> OpenAI:
    return OpenAI(
        base_url=base_url, api_key="sk-test", max_retries=0, _strict_response_validation=True
    )


def _create(client: OpenAI, text: str) -> Batch:
    return client.batches.create(
        input_file_id=_upload(client, text),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )


def _jsonl(client: OpenAI, file_id: str | None) -> list[dict]:
    assert file_id is not None
    return [json.loads(x) for x in client.files.content(file_id).text.splitlines()]


def test_each_kind_of_failed_line_lands_in_the_error_file_with_the_real_shape() -> None:
    with run_sandbox(batch_seconds=0.3) as sb:
        client = _strict_client(sb.base_url)
        malformed = _create(client, _line("ok") + _line("no-messages", messages=None))
        missing = client.batches.create(
            input_file_id=_upload(client, _line("x", model="gpt-nonexistent")),
            endpoint="/v1/chat/completions",
            completion_window="24h",
        )
        sb.set_faults(batch_line_error_rate=1.0)
        injected = _create(client, _line("a") + _line("b"))
        sb.set_faults(batch_line_error_rate=0.0)

        done = wait_for_batch(client, malformed.id)
        assert done.status == "completed" and done.request_counts is not None
        assert (done.request_counts.completed, done.request_counts.failed) == (1, 1)
        [bad] = _jsonl(client, done.error_file_id)
        assert bad["custom_id"] == "no-messages" and bad["error"] is None
        assert bad["response"]["status_code"] == 400
        assert bad["response"]["request_id"].startswith("req_")
        assert bad["response"]["body"]["error"]["param"] == "messages"

        done = wait_for_batch(client, missing.id)
        assert done.status == "completed" and done.output_file_id is None
        [gone] = _jsonl(client, done.error_file_id)
        assert gone["response"]["status_code"] == 404
        assert gone["response"]["body"]["error"]["code"] == "model_not_found"

        done = wait_for_batch(client, injected.id)
        assert done.request_counts is not None and done.request_counts.failed == 2
        lines = _jsonl(client, done.error_file_id)
        assert [line["custom_id"] for line in lines] == ["a", "b"]
        assert {line["response"]["status_code"] for line in lines} == {500}
        assert {line["response"]["body"]["error"]["type"] for line in lines} == {"server_error"}
        assert sb.stats()["faults_injected"]["batch_line_error"] == 2


def test_request_counts_are_true_while_a_batch_runs() -> None:
    bad = {1, 4, 6}  # zero-based lines that fail (n=0 is refused)
    text = "".join(_line(f"r{i}", n=0) if i in bad else _line(f"r{i}") for i in range(8))
    with run_sandbox(batch_seconds=3.0) as sb:
        client = _strict_client(sb.base_url)
        batch = _create(client, text)
        seen: list[tuple[str, int, int]] = []
        while True:
            current = client.batches.retrieve(batch.id)
            counts = current.request_counts
            assert counts is not None and counts.total == 8
            done = counts.completed + counts.failed
            # Lines finish in file order, so the failures so far are the bad lines among them.
            assert counts.failed == len([i for i in bad if i < done]), (current.status, counts)
            seen.append((current.status, counts.completed, counts.failed))
            if current.status == "completed":
                break
            time.sleep(0.05)
    assert seen[-1] == ("completed", 5, 3)
    assert any(status == "in_progress" and 0 < c + f < 8 for status, c, f in seen)
    progress = [c + f for _, c, f in seen]
    assert progress == sorted(progress)


def test_a_batch_past_its_window_expires_with_the_finished_lines_in_its_output() -> None:
    with run_sandbox(batch_seconds=2.0) as sb:
        client = _strict_client(sb.base_url)
        # in progress from 0.2 s to 1.6 s; the window ends at 0.9 s, half way through
        sb.set_faults(batch_window_s=0.9)
        batch = _create(client, "".join(_line(f"r{i}") for i in range(10)))
        sb.set_faults(batch_window_s=None)
        assert batch.expires_at is not None and batch.expires_at - batch.created_at <= 1
        done = wait_for_batch(client, batch.id)
        assert done.status == "expired"
        assert done.expired_at is not None and done.completed_at is None
        assert done.request_counts is not None
        assert (done.request_counts.total, done.request_counts.completed) == (10, 5)
        assert done.request_counts.failed == 5
        assert [line["custom_id"] for line in _jsonl(client, done.output_file_id)] == [
            f"r{i}" for i in range(5)
        ]
        expired = _jsonl(client, done.error_file_id)
        assert [line["custom_id"] for line in expired] == [f"r{i}" for i in range(5, 10)]
        assert all(line["response"] is None for line in expired)
        assert expired[0]["error"] == {
            "code": "batch_expired",
            "message": "This request could not be executed before the completion window expired.",
        }
        assert done.usage is not None and done.usage.input_tokens > 0
        later = _create(client, _line("after"))
        assert later.expires_at == later.created_at + 24 * 3600
        # a window that ends while the batch validates: nothing ran, nothing in progress
        sb.set_faults(batch_window_s=0.1)
        early = wait_for_batch(client, _create(client, _line("x") + _line("y")).id)
        time.sleep(0.3)  # past the time it would have started
        early = client.batches.retrieve(early.id)
        assert early.status == "expired" and early.in_progress_at is None
        assert early.output_file_id is None and early.request_counts is not None
        assert (early.request_counts.completed, early.request_counts.failed) == (0, 2)
        assert {line["error"]["code"] for line in _jsonl(client, early.error_file_id)} == {
            "batch_expired"
        }


def test_a_cancelled_batch_keeps_the_lines_done_before_the_cancel() -> None:
    with run_sandbox(batch_seconds=10.0) as sb:
        client = _strict_client(sb.base_url)
        batch = _create(client, "".join(_line(f"r{i}") for i in range(10)))
        while True:
            counts = client.batches.retrieve(batch.id).request_counts
            assert counts is not None
            if counts.completed >= 1:
                break
            time.sleep(0.05)
        cancelling = client.batches.cancel(batch.id)
        assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
        assert cancelling.request_counts is not None
        kept = cancelling.request_counts.completed
        assert 1 <= kept < 10
        done = wait_for_batch(client, batch.id)
        assert done.status == "cancelled" and done.cancelled_at is not None
        assert done.request_counts is not None
        assert (done.request_counts.completed, done.request_counts.failed) == (kept, 10 - kept)
        outputs = _jsonl(client, done.output_file_id)
        assert [line["custom_id"] for line in outputs] == [f"r{i}" for i in range(kept)]
        cancelled = _jsonl(client, done.error_file_id)
        assert [line["custom_id"] for line in cancelled] == [f"r{i}" for i in range(kept, 10)]
        assert {line["error"]["code"] for line in cancelled} == {"batch_cancelled"}


def test_a_batch_over_the_enqueued_token_limit_fails_until_the_queue_drains() -> None:
    five = "".join(_line(f"r{i}", max_tokens=100) for i in range(5))  # ~ 5 x 110 tokens
    with run_sandbox(batch_seconds=1.0, limits={"gpt-4o-mini": {"batch_queue_tokens": 800}}) as sb:
        client = _strict_client(sb.base_url)
        first = _create(client, five)
        second = _create(client, five)
        refused = wait_for_batch(client, second.id)
        assert refused.status == "failed" and refused.failed_at is not None
        assert refused.errors is not None and refused.errors.data is not None
        [error] = refused.errors.data
        assert error.code == "token_limit_exceeded" and error.line is None
        assert error.message == (
            "Enqueued token limit reached for gpt-4o-mini in organization org-sandbox. "
            "Limit: 800 enqueued tokens. Please try again once some in_progress batches "
            "have been completed."
        )
        assert wait_for_batch(client, first.id).status == "completed"
        again = wait_for_batch(client, _create(client, five).id)
        assert again.status == "completed"
        # a dated snapshot counts under its family's limit (4 x ~210 tokens > 800)
        big = "".join(
            _line(f"s{i}", model="gpt-4o-mini-2024-07-18", max_tokens=200) for i in range(4)
        )
        over = wait_for_batch(client, _create(client, big).id)
        assert over.status == "failed" and over.errors and over.errors.data
        assert over.errors.data[0].message.startswith(
            "Enqueued token limit reached for gpt-4o-mini "
        )


def test_batches_draw_on_their_own_pool_not_the_synchronous_limits() -> None:
    with run_sandbox(batch_seconds=0.5, limits={"gpt-4o-mini": {"rpm": 1}}) as sb:
        client = _strict_client(sb.base_url)
        done = wait_for_batch(client, _create(client, _line("a") + _line("b") + _line("c")).id)
        assert done.request_counts is not None and done.request_counts.completed == 3
        messages = [{"role": "user", "content": "hi"}]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="gpt-4o-mini", messages=messages)


def test_the_request_and_file_size_limits_of_batches_are_enforced() -> None:
    three = "".join(_line(f"r{i}") for i in range(3))  # 456 bytes
    with run_sandbox(batch_max_requests=3, batch_max_file_bytes=500) as sb:
        client = _strict_client(sb.base_url)
        assert wait_for_batch(client, _create(client, three).id).status == "completed"
        with pytest.raises(openai.BadRequestError) as info:
            _upload(client, three + _line("r3"))
        assert info.value.message == "Error code: 400 - File is too large."
        assert client.files.create(file=("big.jsonl", b"x" * 501), purpose="user_data").id
    with run_sandbox(batch_max_requests=3) as sb:
        client = _strict_client(sb.base_url)
        refused = wait_for_batch(client, _create(client, three + _line("r3")).id)
        assert refused.status == "failed" and refused.errors and refused.errors.data
        assert refused.errors.data[0].code == "request_limit_exceeded"
        assert "at most 3" in refused.errors.data[0].message
