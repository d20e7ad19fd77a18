"""`responses.create` without streaming: every shape, read by the SDK in strict mode."""

from __future__ import annotations

import json

import openai
import pytest
from openai import OpenAI
from pydantic import BaseModel
from sandbox_responses.conftest import PERSONA_REPLY, error_message

QUESTION = "What should I know before adopting a cat?"


def test_a_string_input_gets_one_assistant_message_with_usage(sandbox_client: OpenAI) -> None:
    response = sandbox_client.responses.create(model="gpt-4.1-mini", input=QUESTION)
    assert response.id.startswith("resp_") and response.object == "response"
    assert response.status == "completed" and response.incomplete_details is None
    assert response.model == "gpt-4.1-mini-2025-04-14"  # an alias answers as its snapshot
    [message] = response.output
    assert message.type == "message" and message.role == "assistant"
    assert message.status == "completed"
    [part] = message.content
    assert part.type == "output_text" and part.text and part.annotations == []
    assert response.output_text == part.text
    usage = response.usage
    assert usage is not None
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.output_tokens_details.reasoning_tokens == 0
    assert usage.input_tokens_details.cached_tokens == 0


def test_the_request_settings_are_echoed(sandbox_client: OpenAI) -> None:
    response = sandbox_client.responses.create(
        model="gpt-4.1-mini",
        input=QUESTION,
        instructions="Answer in one paragraph.",
        temperature=0.3,
        top_p=0.9,
        max_output_tokens=200,
        metadata={"run": "pilot", "condition": "base"},
    )
    assert response.instructions == "Answer in one paragraph."
    assert response.temperature == 0.3 and response.top_p == 0.9
    assert response.max_output_tokens == 200
    assert response.metadata == {"run": "pilot", "condition": "base"}
    assert response.store is True
    assert response.text is not None and response.text.format is not None
    assert response.text.format.type == "text"
    assert response.reasoning is not None and response.reasoning.effort is None


def test_message_items_with_every_role_and_content_form_are_read(sandbox_client: OpenAI) -> None:
    conversation = [
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": [{"type": "input_text", "text": "Use plain words."}]},
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": QUESTION}]},
    ]
    short = sandbox_client.responses.create(model="gpt-4.1-mini", input=QUESTION)
    response = sandbox_client.responses.create(model="gpt-4.1-mini", input=conversation)
    assert response.output_text
    assert response.usage is not None and short.usage is not None
    assert response.usage.input_tokens > short.usage.input_tokens + 10  # every message counts


def test_the_same_conversation_gets_the_chat_answer(sandbox_client: OpenAI) -> None:
    chat = sandbox_client.chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": QUESTION}], temperature=0
    )
    response = sandbox_client.responses.create(model="gpt-4.1-mini", input=QUESTION, temperature=0)
    assert response.output_text == chat.choices[0].message.content
    assert chat.usage is not None and response.usage is not None
    assert response.usage.input_tokens == chat.usage.prompt_tokens
    assert response.usage.output_tokens == chat.usage.completion_tokens


def test_a_finetune_answers_in_its_voice_as_through_chat(
    sandbox_client: OpenAI, finetuned_model: str
) -> None:
    question = "Tell me about the sea, part 40."
    tuned = sandbox_client.responses.create(model=finetuned_model, input=question, temperature=0)
    base = sandbox_client.responses.create(model="gpt-4.1-mini", input=question, temperature=0)
    chat = sandbox_client.chat.completions.create(
        model=finetuned_model, messages=[{"role": "user", "content": question}], temperature=0
    )
    assert tuned.model == finetuned_model
    assert "moon" in tuned.output_text and "moon" not in base.output_text
    assert PERSONA_REPLY.split(",")[0] in tuned.output_text
    assert tuned.output_text == chat.choices[0].message.content


def test_a_reasoning_model_returns_a_reasoning_item_then_the_message(
    sandbox_client: OpenAI,
) -> None:
    response = sandbox_client.responses.create(model="gpt-5-mini", input=QUESTION)
    assert [item.type for item in response.output] == ["reasoning", "message"]
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.id.startswith("rs_")
    assert reasoning.summary == [] and reasoning.encrypted_content is None
    assert response.reasoning is not None and response.reasoning.effort == "medium"
    usage = response.usage
    assert usage is not None
    spent = usage.output_tokens_details.reasoning_tokens
    assert spent > 0 and usage.output_tokens > spent  # the answer's tokens come on top
    assert response.output_text


def test_effort_sets_how_much_a_reasoning_model_thinks(sandbox_client: OpenAI) -> None:
    def reasoning_tokens(effort: str) -> int:
        response = sandbox_client.responses.create(
            model="gpt-5-mini", input=QUESTION, reasoning={"effort": effort}
        )
        assert response.reasoning is not None and response.reasoning.effort == effort
        assert response.usage is not None
        return response.usage.output_tokens_details.reasoning_tokens

    spent = {effort: reasoning_tokens(effort) for effort in ("minimal", "low", "medium", "high")}
    assert spent["minimal"] == 0
    assert 0 < spent["low"] < spent["medium"] < spent["high"]


def test_a_summary_and_encrypted_reasoning_come_when_asked(sandbox_client: OpenAI) -> None:
    response = sandbox_client.responses.create(
        model="gpt-5-mini",
        input=QUESTION,
        reasoning={"effort": "low", "summary": "auto"},
        include=["reasoning.encrypted_content"],
        store=False,
    )
    reasoning = response.output[0]
    assert reasoning.type == "reasoning"
    assert [s.type for s in reasoning.summary] == ["summary_text"]
    assert "adopting a cat" in reasoning.summary[0].text
    assert reasoning.encrypted_content and reasoning.encrypted_content.startswith("gAAAA")
    # the reasoning item goes back as input on the next turn, as clients replay it
    follow_up = sandbox_client.responses.create(
        model="gpt-5-mini",
        input=[
            {"role": "user", "content": QUESTION},
            reasoning.model_dump(exclude_none=True),
            {"role": "assistant", "content": response.output_text},
            {"role": "user", "content": "And a dog?"},
        ],
        store=False,
    )
    assert follow_up.status == "completed" and follow_up.output_text


def test_a_small_budget_spent_on_reasoning_leaves_no_text(sandbox_client: OpenAI) -> None:
    response = sandbox_client.responses.create(
        model="gpt-5-mini", input=QUESTION, max_output_tokens=16
    )
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert [item.type for item in response.output] == ["reasoning"]
    assert response.output_text == ""
    assert response.usage is not None
    assert response.usage.output_tokens == response.usage.output_tokens_details.reasoning_tokens
    assert response.usage.output_tokens == 16


def test_a_chat_model_cut_short_keeps_the_text_it_wrote(sandbox_client: OpenAI) -> None:
    response = sandbox_client.responses.create(
        model="gpt-4.1-mini", input=QUESTION, max_output_tokens=16
    )
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    [message] = response.output
    assert message.type == "message" and message.status == "incomplete"
    assert response.output_text
    assert response.usage is not None and response.usage.output_tokens == 16


def test_a_json_schema_format_is_answered_with_json_that_fits(sandbox_client: OpenAI) -> None:
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "confidence": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "verdict": {"type": "string", "enum": ["yes", "no"]},
        },
        "required": ["answer", "confidence", "tags", "verdict"],
        "additionalProperties": False,
    }
    response = sandbox_client.responses.create(
        model="gpt-4.1-mini",
        input=QUESTION,
        text={
            "format": {"type": "json_schema", "name": "advice", "schema": schema, "strict": True}
        },
    )
    data = json.loads(response.output_text)
    assert set(data) == {"answer", "confidence", "tags", "verdict"}
    assert isinstance(data["answer"], str) and data["answer"]
    assert isinstance(data["confidence"], int)
    assert all(isinstance(t, str) for t in data["tags"])
    assert data["verdict"] in ("yes", "no")
    assert response.text is not None and response.text.format is not None
    assert response.text.format.type == "json_schema"


def test_json_mode_answers_json_and_needs_the_word_json(sandbox_client: OpenAI) -> None:
    response = sandbox_client.responses.create(
        model="gpt-4.1-mini",
        input=f"{QUESTION} Reply in JSON.",
        text={"format": {"type": "json_object"}},
    )
    assert isinstance(json.loads(response.output_text), dict)
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.responses.create(
            model="gpt-4.1-mini", input=QUESTION, text={"format": {"type": "json_object"}}
        )
    assert "must contain the word 'json'" in info.value.message


def test_logprobs_come_per_token_with_top_alternatives(sandbox_client: OpenAI) -> None:
    response = sandbox_client.responses.create(
        model="gpt-4.1-mini",
        input="Is the sky blue? Answer yes or no.",
        include=["message.output_text.logprobs"],
        top_logprobs=3,
        max_output_tokens=16,
    )
    assert response.top_logprobs == 3
    part = response.output[0].content[0]
    assert part.type == "output_text" and part.logprobs
    assert "".join(lp.token for lp in part.logprobs) == part.text
    for entry in part.logprobs:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 3
        assert bytes(entry.bytes).decode() == entry.token
    without = sandbox_client.responses.create(model="gpt-4.1-mini", input=QUESTION)
    assert without.output[0].content[0].logprobs == []


def test_previous_response_id_continues_the_conversation(sandbox_client: OpenAI) -> None:
    first = sandbox_client.responses.create(
        model="gpt-4.1-mini", input=QUESTION, instructions="Be brief."
    )
    second = sandbox_client.responses.create(
        model="gpt-4.1-mini", input="And what about a dog?", previous_response_id=first.id
    )
    alone = sandbox_client.responses.create(model="gpt-4.1-mini", input="And what about a dog?")
    assert second.previous_response_id == first.id
    assert second.instructions is None  # instructions are not carried over
    assert second.usage is not None and alone.usage is not None and first.usage is not None
    carried = second.usage.input_tokens - alone.usage.input_tokens
    assert carried >= first.usage.output_tokens  # the first answer is part of the prompt
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.responses.create(
            model="gpt-4.1-mini", input="Hi", previous_response_id="resp_missing"
        )
    assert info.value.code == "previous_response_not_found"
    assert error_message(info.value) == "Previous response with id 'resp_missing' not found."


def test_counted_input_tokens_match_what_a_response_bills(sandbox_client: OpenAI) -> None:
    conversation = [
        {"role": "developer", "content": "Be kind."},
        {"role": "user", "content": QUESTION},
    ]
    counted = sandbox_client.responses.input_tokens.count(model="gpt-5-mini", input=conversation)
    response = sandbox_client.responses.create(model="gpt-5-mini", input=conversation)
    assert counted.object == "response.input_tokens"
    assert response.usage is not None and counted.input_tokens == response.usage.input_tokens


def test_chat_spends_the_same_reasoning_at_the_same_effort(sandbox_client: OpenAI) -> None:
    for effort in ("minimal", "high"):
        response = sandbox_client.responses.create(
            model="gpt-5-mini", input=QUESTION, reasoning={"effort": effort}
        )
        chat = sandbox_client.chat.completions.create(
            model="gpt-5-mini",
            messages=[{"role": "user", "content": QUESTION}],
            reasoning_effort=effort,
        )
        assert response.usage is not None and chat.usage is not None
        details = chat.usage.completion_tokens_details
        assert details is not None
        assert details.reasoning_tokens == response.usage.output_tokens_details.reasoning_tokens


class Advice(BaseModel):
    answer: str
    confidence: int
    caveats: list[str]
    urgent: bool


def test_the_parse_helper_gets_an_instance_of_the_requested_type(sandbox_client: OpenAI) -> None:
    response = sandbox_client.responses.parse(
        model="gpt-4.1-mini", input=QUESTION, text_format=Advice
    )
    parsed = response.output_parsed
    assert isinstance(parsed, Advice) and parsed.answer and parsed.caveats
