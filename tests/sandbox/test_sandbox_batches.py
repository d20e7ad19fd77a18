"""Batches: create from an uploaded JSONL, run, output and error files, list, cancel."""

from __future__ import annotations

import json

import openai
import pytest
from fixtures.sandbox import wait_for_batch
from openai import OpenAI


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
