"""Stored responses: retrieve, delete and input items, scoped to an account's project."""

from __future__ import annotations

import openai
import pytest
from openai import OpenAI
from sandbox_responses.conftest import error_message

from labmgr.sandbox import SandboxHandle

CONVERSATION = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": "Name a planet."},
    {"role": "assistant", "content": "Mars."},
    {"role": "user", "content": [{"type": "input_text", "text": "Another one?"}]},
]


def test_a_stored_response_is_retrieved_as_it_was_created(sandbox_client: OpenAI) -> None:
    created = sandbox_client.responses.create(
        model="gpt-5-mini", input="Name a planet.", metadata={"k": "v"}
    )
    fetched = sandbox_client.responses.retrieve(created.id)
    assert fetched == created
    assert fetched.output_text == created.output_text


def test_store_false_keeps_nothing_to_retrieve(sandbox_client: OpenAI) -> None:
    created = sandbox_client.responses.create(model="gpt-4.1-mini", input="Hi.", store=False)
    assert created.store is False
    with pytest.raises(openai.NotFoundError) as info:
        sandbox_client.responses.retrieve(created.id)
    assert error_message(info.value) == f"Response with id '{created.id}' not found."


def test_a_deleted_response_is_gone(sandbox_client: OpenAI) -> None:
    created = sandbox_client.responses.create(model="gpt-4.1-mini", input="Hi.")
    raw = sandbox_client.responses.with_raw_response.delete(created.id)
    assert raw.http_response.json() == {"id": created.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        sandbox_client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        sandbox_client.responses.delete(created.id)


def test_input_items_list_the_messages_sent_newest_first(sandbox_client: OpenAI) -> None:
    created = sandbox_client.responses.create(model="gpt-4.1-mini", input=CONVERSATION)
    items = list(sandbox_client.responses.input_items.list(created.id))
    assert [item.type for item in items] == ["message"] * 4
    assert [getattr(item, "role", None) for item in items] == [
        "user",
        "assistant",
        "user",
        "developer",
    ]
    assert all(item.id.startswith("msg_") for item in items)
    assert len({item.id for item in items}) == 4
    oldest_first = sandbox_client.responses.input_items.list(created.id, order="asc")
    assert [item.id for item in oldest_first] == [item.id for item in reversed(items)]
    page = sandbox_client.responses.input_items.list(created.id, limit=3)
    assert len(page.data) == 3 and page.has_more is True
    assert [item.id for item in page] == [item.id for item in items]  # the SDK pages on


def test_another_project_cannot_see_or_delete_a_response(
    sandbox_multi_account: SandboxHandle,
) -> None:
    def client(key: str) -> OpenAI:
        return OpenAI(
            base_url=sandbox_multi_account.base_url,
            api_key=key,
            max_retries=0,
            _strict_response_validation=True,
        )

    alpha, beta, alpha_two = (
        client("sk-test-alpha"),
        client("sk-test-beta"),
        client("sk-test-alpha-two"),
    )
    created = alpha.responses.create(model="gpt-4.1-mini", input="A secret plan.")
    for other in (beta, alpha_two):  # another organization; the same one, another project
        with pytest.raises(openai.NotFoundError) as info:
            other.responses.retrieve(created.id)
        assert error_message(info.value) == f"Response with id '{created.id}' not found."
        with pytest.raises(openai.NotFoundError):
            other.responses.delete(created.id)
        with pytest.raises(openai.NotFoundError):
            other.responses.input_items.list(created.id)
        with pytest.raises(openai.BadRequestError) as chained:
            other.responses.create(
                model="gpt-4.1-mini", input="Go on.", previous_response_id=created.id
            )
        assert chained.value.code == "previous_response_not_found"
    assert alpha.responses.retrieve(created.id).id == created.id


def test_only_background_responses_can_be_cancelled(sandbox_client: OpenAI) -> None:
    created = sandbox_client.responses.create(model="gpt-4.1-mini", input="Hi.")
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.responses.cancel(created.id)
    assert "background=true" in error_message(info.value)
