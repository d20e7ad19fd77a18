"""Request bodies the real API refuses are refused here too, with its codes and wording."""

from __future__ import annotations

from typing import Any

import pytest
from sandbox_behaviour.behaviour_support import user

from labmgr.sandbox.behaviour import ChatSimulator
from labmgr.sandbox.errors import APIError

HELLO = user("Hello")


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({}, "messages", "missing_required_parameter"),
        ({"messages": []}, "messages", "empty_array"),
        ({"messages": "Hello"}, "messages", "invalid_type"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "invalid_value"),
        ({"messages": [{"content": "x"}]}, "messages[0].role", "missing_required_parameter"),
        ({"messages": [{"role": "user"}]}, "messages[0].content", "missing_required_parameter"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content", "invalid_type"),
        (
            {"messages": [{"role": "user", "content": ["hi"]}]},
            "messages[0].content[0]",
            "invalid_type",
        ),
        (
            {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
            "messages[0].content[0].type",
            "missing_required_parameter",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]},
            "messages[0].content[0].text",
            "invalid_type",
        ),
        ({"messages": HELLO, "n": 0}, "n", "integer_below_min_value"),
        ({"messages": HELLO, "n": 129}, "n", "integer_above_max_value"),
        ({"messages": HELLO, "n": "2"}, "n", "invalid_type"),
        (
            {"messages": HELLO, "logprobs": True, "top_logprobs": 21},
            "top_logprobs",
            "integer_above_max_value",
        ),
        (
            {"messages": HELLO, "logprobs": True, "top_logprobs": -1},
            "top_logprobs",
            "integer_below_min_value",
        ),
        ({"messages": HELLO, "top_logprobs": 5}, "top_logprobs", "invalid_value"),
        (
            {"messages": HELLO, "logprobs": False, "top_logprobs": 5},
            "top_logprobs",
            "invalid_value",
        ),
        ({"messages": HELLO, "temperature": 2.5}, "temperature", "decimal_above_max_value"),
        ({"messages": HELLO, "temperature": -0.1}, "temperature", "decimal_below_min_value"),
        ({"messages": HELLO, "max_tokens": 0}, "max_tokens", "integer_below_min_value"),
        (
            {"messages": HELLO, "max_completion_tokens": 0},
            "max_completion_tokens",
            "integer_below_min_value",
        ),
        (
            {"messages": HELLO, "max_tokens": 5, "max_completion_tokens": 5},
            "max_tokens",
            "invalid_request",
        ),
        ({"messages": HELLO, "max_tokens": 10**6}, "max_tokens", "invalid_value"),
    ],
)
def test_invalid_bodies_are_refused_with_the_real_param_and_code(
    simulator: ChatSimulator, body: dict[str, Any], param: str, code: str
) -> None:
    with pytest.raises(APIError) as caught:
        simulator.complete("gpt-4o-mini", body)
    assert (caught.value.param, caught.value.code, caught.value.status) == (param, code, 400)
    assert caught.value.message


def test_unknown_role_message_lists_the_supported_roles(simulator: ChatSimulator) -> None:
    with pytest.raises(APIError) as caught:
        simulator.complete("gpt-4o-mini", {"messages": [{"role": "bot", "content": "x"}]})
    assert caught.value.message == (
        "Invalid value: 'bot'. Supported values are: 'system', 'assistant', 'user', "
        "'function', 'tool', and 'developer'."
    )


def test_a_prompt_longer_than_the_context_window_is_refused(simulator: ChatSimulator) -> None:
    long_prompt = "word " * 17_000  # gpt-3.5-turbo-0125 holds 16,385 tokens
    with pytest.raises(APIError) as caught:
        simulator.complete("gpt-3.5-turbo-0125", {"messages": user(long_prompt)})
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.param == "messages"
    assert caught.value.message.startswith(
        "This model's maximum context length is 16385 tokens. However, your messages resulted in"
    )
    # The same prompt fits a model with a larger window.
    simulator.complete("gpt-4o-mini", {"messages": user(long_prompt), "max_tokens": 5})


def test_prompt_plus_requested_completion_over_the_window_is_refused(
    simulator: ChatSimulator,
) -> None:
    prompt = "word " * 14_000
    with pytest.raises(APIError) as caught:
        simulator.complete("gpt-3.5-turbo-0125", {"messages": user(prompt), "max_tokens": 4_000})
    assert caught.value.code == "context_length_exceeded"
    assert "in the completion" in caught.value.message


def test_content_parts_and_null_assistant_content_are_accepted(simulator: ChatSimulator) -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "user", "content": [{"type": "text", "text": "Tell me about tea."}]},
    ]
    completion = simulator.complete("gpt-4o-mini", {"messages": messages})
    assert completion.choices[0]["message"]["content"]


def test_reasoning_models_refuse_max_tokens_logprobs_and_stop(simulator: ChatSimulator) -> None:
    for body, param in (
        ({"messages": HELLO, "max_tokens": 10}, "max_tokens"),
        ({"messages": HELLO, "logprobs": True}, "logprobs"),
        ({"messages": HELLO, "temperature": 0}, "temperature"),
        ({"messages": HELLO, "stop": ["\n"]}, "stop"),
    ):
        with pytest.raises(APIError) as caught:
            simulator.complete("o4-mini", body)
        assert caught.value.param == param
    answer = simulator.complete("gpt-5-mini", {"messages": HELLO, "max_completion_tokens": 2000})
    assert answer.usage["completion_tokens_details"]["reasoning_tokens"] > 0


def test_legacy_completion_models_are_not_chat_models(simulator: ChatSimulator) -> None:
    with pytest.raises(APIError) as caught:
        simulator.complete("davinci-002", {"messages": HELLO})
    assert caught.value.status == 404
    assert "not a chat model" in caught.value.message


def test_unknown_model_is_a_404_model_not_found(simulator: ChatSimulator) -> None:
    assert simulator.card("gpt-4o-mini-typo") is None
    with pytest.raises(APIError) as caught:
        simulator.complete("gpt-4o-mini-typo", {"messages": HELLO})
    assert (caught.value.status, caught.value.code) == (404, "model_not_found")
