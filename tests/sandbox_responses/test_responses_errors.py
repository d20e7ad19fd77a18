"""Requests the real API refuses get its status, message, param and code."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai import OpenAI
from sandbox_responses.conftest import error_message

QUESTION = [{"role": "user", "content": "Say hi."}]


def _refusal(client: OpenAI, **body: Any) -> openai.BadRequestError:
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(**{"model": "gpt-5-mini", "input": "Say hi.", **body})
    return info.value


def _chat_refusal(client: OpenAI, **body: Any) -> openai.BadRequestError:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**{"model": "gpt-5-mini", "messages": QUESTION, **body})
    return info.value


@pytest.mark.parametrize("param", ["temperature", "top_p"])
def test_sampling_settings_are_refused_for_reasoning_models_as_in_chat(
    sandbox_client: OpenAI, param: str
) -> None:
    error = _refusal(sandbox_client, **{param: 0.5})
    chat = _chat_refusal(sandbox_client, **{param: 0.5})
    assert (error.param, error.code) == (param, "unsupported_value")
    assert error_message(error) == error_message(chat)
    assert error_message(error) == (
        f"Unsupported value: '{param}' does not support 0.5 with this model. "
        "Only the default (1) value is supported."
    )
    fine = sandbox_client.responses.create(model="gpt-5-mini", input="Say hi.", **{param: 1})
    assert fine.status == "completed"


def test_an_effort_the_model_lacks_is_refused_with_the_ones_it_has(
    sandbox_client: OpenAI,
) -> None:
    error = _refusal(sandbox_client, reasoning={"effort": "xhigh"})
    assert (error.param, error.code) == ("reasoning.effort", "unsupported_value")
    assert error_message(error) == (
        "Unsupported value: 'reasoning.effort' does not support 'xhigh' with this model. "
        "Supported values are: 'minimal', 'low', 'medium', and 'high'."
    )
    o_series = _refusal(sandbox_client, model="o4-mini", reasoning={"effort": "minimal"})
    assert "Supported values are: 'low', 'medium', and 'high'." in error_message(o_series)
    chat = _chat_refusal(sandbox_client, reasoning_effort="xhigh")
    assert chat.param == "reasoning_effort" and chat.code == "unsupported_value"


def test_an_effort_that_does_not_exist_is_an_invalid_value(sandbox_client: OpenAI) -> None:
    error = _refusal(sandbox_client, reasoning={"effort": "extreme"})
    assert (error.param, error.code) == ("reasoning.effort", "invalid_value")
    assert error_message(error).startswith("Invalid value: 'extreme'. Supported values are:")


def test_reasoning_settings_are_refused_for_chat_models(sandbox_client: OpenAI) -> None:
    error = _refusal(sandbox_client, model="gpt-4.1-mini", reasoning={"effort": "low"})
    assert (error.param, error.code) == ("reasoning.effort", "unsupported_parameter")
    assert error_message(error) == (
        "Unsupported parameter: 'reasoning.effort' is not supported with this model."
    )
    chat = _chat_refusal(sandbox_client, model="gpt-4.1-mini", reasoning_effort="low")
    assert (chat.param, chat.code) == ("reasoning_effort", "unsupported_parameter")


def test_logprobs_are_refused_for_reasoning_models(sandbox_client: OpenAI) -> None:
    error = _refusal(sandbox_client, include=["message.output_text.logprobs"])
    assert (error.param, error.code) == ("include", "unsupported_value")
    top = _refusal(sandbox_client, top_logprobs=5)
    assert (top.param, top.code) == ("top_logprobs", "unsupported_parameter")


def test_an_unknown_model_is_404_with_the_real_wording(sandbox_client: OpenAI) -> None:
    for model in ("gpt-nonexistent", "ft:gpt-4.1-mini-2025-04-14:sandbox:nope:AbCdEfGh"):
        with pytest.raises(openai.NotFoundError) as info:
            sandbox_client.responses.create(model=model, input="Hi.")
        assert info.value.code == "model_not_found"
        assert error_message(info.value) == (
            f"The model `{model}` does not exist or you do not have access to it."
        )


@pytest.mark.parametrize(
    ("body", "param", "fragment"),
    [
        ({"max_output_tokens": 8}, "max_output_tokens", "Expected a value >= 16"),
        ({"max_output_tokens": 500_000}, "max_output_tokens", "supports at most 128000"),
        ({"input": []}, "input", "empty array"),
        ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role", "'robot'"),
        ({"input": [{"role": "user"}]}, "input[0].content", "but got null"),
        ({"input": None}, "input", "Missing required parameter: 'input'."),
        ({"include": ["everything"]}, "include[0]", "Invalid value: 'everything'"),
        ({"metadata": {str(i): "v" for i in range(17)}}, "metadata", "at most 16"),
        ({"text": {"format": {"type": "json_schema"}}}, "text.format.name", "Missing"),
        ({"extra_body": {"messages": QUESTION}}, "messages", "Unknown parameter: 'messages'."),
        ({"tools": [{"type": "web_search"}]}, "tools", "runs no tools"),
        ({"background": True}, "background", "background"),
        ({"stream_options": {"include_obfuscation": False}}, "stream_options", "'stream'"),
        ({"model": "davinci-002"}, "model", "only supported in v1/completions"),
    ],
)
def test_bad_bodies_name_the_parameter(
    sandbox_client: OpenAI, body: dict[str, Any], param: str, fragment: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.responses.create(
            **{"model": "gpt-5-mini", "input": "Hi.", **body}  # type: ignore[call-overload]
        )
    assert info.value.param == param
    assert fragment in error_message(info.value)


def test_a_function_call_item_is_refused_with_what_to_do(sandbox_client: OpenAI) -> None:
    error = _refusal(
        sandbox_client,
        input=[{"type": "function_call_output", "call_id": "call_1", "output": "42"}],
    )
    assert error.param == "input[0].type"
    assert "runs no tools" in error_message(error)


def test_top_p_outside_zero_to_one_is_refused_by_both_endpoints(sandbox_client: OpenAI) -> None:
    error = _refusal(sandbox_client, model="gpt-4.1-mini", top_p=1.5)
    chat = _chat_refusal(sandbox_client, model="gpt-4.1-mini", top_p=1.5)
    assert (error.param, error.code) == ("top_p", "decimal_above_max_value")
    assert error_message(error) == error_message(chat)


def test_an_input_past_the_context_window_is_refused(sandbox_client: OpenAI) -> None:
    error = _refusal(sandbox_client, model="gpt-3.5-turbo", input="word " * 20_000)
    assert (error.param, error.code) == ("input", "context_length_exceeded")
    assert error_message(error).startswith("Your input exceeds the context window of this model.")
