"""Files: multipart upload, retrieve, list with cursor pagination, content, delete."""

from __future__ import annotations

import io

import openai
import pytest
from openai import OpenAI


def test_upload_keeps_name_size_and_content(sandbox_client: OpenAI) -> None:
    data = b'{"messages": []}\n'
    created = sandbox_client.files.create(file=("train.jsonl", data), purpose="fine-tune")
    assert created.id.startswith("file-")
    assert (created.filename, created.bytes, created.purpose) == (
        "train.jsonl",
        len(data),
        "fine-tune",
    )
    assert sandbox_client.files.retrieve(created.id) == created
    assert sandbox_client.files.content(created.id).content == data


def test_anonymous_stream_is_named_upload(sandbox_client: OpenAI) -> None:
    created = sandbox_client.files.create(file=io.BytesIO(b"{}\n"), purpose="batch")
    assert created.filename == "upload"
    assert created.expires_at is not None  # batch files expire after 30 days


def test_listing_pages_newest_first_and_auto_pagination_ends(sandbox_client: OpenAI) -> None:
    ids = [
        sandbox_client.files.create(file=(f"p{i}.jsonl", b"x"), purpose="user_data").id
        for i in range(5)
    ]
    first = sandbox_client.files.list(purpose="user_data", limit=2)
    assert [f.id for f in first.data] == ids[::-1][:2]
    assert first.has_more is True
    every = [f.id for f in sandbox_client.files.list(purpose="user_data", limit=2)]
    assert every[:5] == ids[::-1]
    assert len(every) == len(set(every))
    ascending = sandbox_client.files.list(purpose="user_data", order="asc", limit=100)
    assert [f.id for f in ascending.data][-5:] == ids
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.files.list(order="sideways")  # type: ignore[arg-type]
    assert (info.value.param, info.value.code) == ("order", "invalid_value")


def test_deleted_file_is_gone(sandbox_client: OpenAI) -> None:
    created = sandbox_client.files.create(file=("gone.jsonl", b"x"), purpose="user_data")
    deleted = sandbox_client.files.delete(created.id)
    assert deleted.deleted is True and deleted.id == created.id
    with pytest.raises(openai.NotFoundError) as info:
        sandbox_client.files.retrieve(created.id)
    assert f"No such File object: {created.id}" in info.value.message


def test_unknown_purpose_is_a_bad_request(sandbox_client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.files.create(file=("x.jsonl", b"x"), purpose="nonsense")  # type: ignore[arg-type]
    assert info.value.param == "purpose"


def test_fine_tune_files_must_be_jsonl(sandbox_client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError):
        sandbox_client.files.create(file=("train.csv", b"a,b\n"), purpose="fine-tune")
