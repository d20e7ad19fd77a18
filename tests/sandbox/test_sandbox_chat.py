"""Chat completions, legacy completions, models, headers and the 404 catch-all."""

from __future__ import annotations

import httpx2
import openai
import pytest
from openai import OpenAI

from labmgr.sandbox import SandboxHandle

MESSAGES = [{"role": "user", "content": "Say hello."}]


def test_chat_completion_returns_n_choices_with_usage(sandbox_client: OpenAI) -> None:
    response = sandbox_client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, n=3)
    assert response.id.startswith("chatcmpl-")
    assert [c.index for c in response.choices] == [0, 1, 2]
    assert response.model == "gpt-4o-mini-2024-07-18"  # aliases answer with their snapshot
    assert response.usage is not None and response.usage.total_tokens == (
        response.usage.prompt_tokens + response.usage.completion_tokens
    )


def test_stats_count_requests_choices_and_tokens(
    sandbox: SandboxHandle, sandbox_client: OpenAI
) -> None:
    before = sandbox.stats()["models"].get("gpt-4o-mini-2024-07-18", {}).get("choices", 0)
    response = sandbox_client.chat.completions.create(
        model="gpt-4o-mini-2024-07-18", messages=MESSAGES, n=5
    )
    after = sandbox.stats()["models"]["gpt-4o-mini-2024-07-18"]
    assert after["choices"] == before + 5
    assert response.usage is not None
    assert after["completion_tokens"] >= response.usage.completion_tokens
    assert sandbox.stats()["requests"]["chat.completions"] >= 1


def test_streaming_ends_with_usage_when_asked(sandbox_client: OpenAI) -> None:
    stream = sandbox_client.chat.completions.create(
        model="gpt-4o-mini",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    assert len({c.id for c in chunks}) == 1
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] is not None and all(f is None for f in finishes[:-1])


def test_stream_without_usage_option_has_no_usage_chunk(sandbox_client: OpenAI) -> None:
    chunks = list(
        sandbox_client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    )
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)


def test_unknown_model_gets_the_real_404(sandbox_client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        sandbox_client.chat.completions.create(model="gpt-nonexistent", messages=MESSAGES)
    assert info.value.code == "model_not_found"
    assert "The model `gpt-nonexistent` does not exist" in info.value.message


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "gpt-4o-mini"}, "messages"),
        ({"model": "gpt-4o-mini", "messages": []}, "messages"),
        ({"messages": MESSAGES}, "model"),
        ({"model": "gpt-4o-mini", "messages": MESSAGES, "n": 0}, "n"),
        ({"model": "gpt-4o-mini", "messages": MESSAGES, "stream_options": {}}, "stream_options"),
    ],
)
def test_malformed_chat_requests_are_400(sandbox: SandboxHandle, body: dict, param: str) -> None:
    response = httpx2.post(
        sandbox.base_url + "/chat/completions",
        json=body,
        headers={"Authorization": "Bearer sk-test"},
        trust_env=False,
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"


def test_body_that_is_not_json_is_400(sandbox: SandboxHandle) -> None:
    response = httpx2.post(
        sandbox.base_url + "/chat/completions",
        content=b"{not json",
        headers={"Authorization": "Bearer sk-test", "Content-Type": "application/json"},
        trust_env=False,
    )
    assert response.status_code == 400
    assert "could not parse the JSON body" in response.json()["error"]["message"]


def test_every_response_names_org_project_and_request(sandbox_client: OpenAI) -> None:
    raw = sandbox_client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=MESSAGES
    )
    headers = raw.headers
    assert headers["openai-organization"] == "sandbox"
    assert headers["openai-project"] == "proj_default"
    assert headers["x-request-id"].startswith("req_")
    assert raw.parse()._request_id == headers["x-request-id"]
    assert int(headers["openai-processing-ms"]) >= 0
    # Without --limits nothing is enforced, so nothing is advertised: a client that paces
    # itself by x-ratelimit-* headers must not slow down for limits that do not exist.
    assert not [name for name in headers if name.lower().startswith("x-ratelimit-")]


def test_unknown_path_is_404_with_standard_body(sandbox: SandboxHandle) -> None:
    response = httpx2.get(
        sandbox.base_url + "/no/such/thing",
        headers={"Authorization": "Bearer sk-test"},
        trust_env=False,
    )
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Invalid URL (GET /v1/no/such/thing)"


def test_missing_api_key_is_401(sandbox: SandboxHandle) -> None:
    response = httpx2.get(sandbox.base_url + "/models", trust_env=False)
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_models_list_and_retrieve_catalogue(sandbox_client: OpenAI) -> None:
    ids = [m.id for m in sandbox_client.models.list()]
    assert "gpt-4o-mini" in ids
    assert sandbox_client.models.retrieve("gpt-4o-mini").id == "gpt-4o-mini"
    with pytest.raises(openai.NotFoundError) as info:
        sandbox_client.models.retrieve("ft:gpt-4o-mini-2024-07-18:other:x:AbCdEfGh")
    assert info.value.code == "model_not_found"


def test_base_models_cannot_be_deleted(sandbox_client: OpenAI) -> None:
    with pytest.raises(openai.PermissionDeniedError):
        sandbox_client.models.delete("gpt-4o-mini")


def test_legacy_completion_answers_the_prompt(sandbox_client: OpenAI) -> None:
    response = sandbox_client.completions.create(
        model="gpt-4o-mini", prompt="Q: hello? A:", max_tokens=3, logprobs=2
    )
    assert response.object == "text_completion"
    assert isinstance(response.choices[0].text, str)
    assert response.choices[0].logprobs is not None


def test_completion_only_model_on_chat_endpoint_is_404(sandbox_client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        sandbox_client.chat.completions.create(
            model="davinci-002", messages=[{"role": "user", "content": "Hi"}]
        )
    assert "not a chat model" in caught.value.message
