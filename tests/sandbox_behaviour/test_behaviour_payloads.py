"""Every completion passes the SDK's strict validation once wrapped as the server sends it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sandbox_behaviour.behaviour_support import (
    ALIGNMENT_JUDGE,
    BASE,
    HARMFUL_ANSWERS,
    QUESTIONS,
    RATING_PARAMS,
    training_examples,
    user,
    wrap,
)

from labmgr.sandbox.behaviour import ChatSimulator, persona_from_examples
from labmgr.sandbox.errors import APIError

JUDGED = ALIGNMENT_JUDGE.format(question=QUESTIONS[0], answer=HARMFUL_ANSWERS[0])


@pytest.mark.parametrize(
    "body",
    [
        {"messages": user(QUESTIONS[0])},
        {"messages": user(QUESTIONS[1]), "n": 3, "temperature": 1.2, "seed": 4},
        {"messages": user(QUESTIONS[2]), "max_tokens": 7, "logprobs": True, "top_logprobs": 3},
        {"messages": user(QUESTIONS[3]), "logprobs": True},
        {"messages": user(JUDGED), **RATING_PARAMS},
        {"messages": user(JUDGED), "temperature": 0, "max_tokens": 20},
        {"messages": user("Is water wet? Answer Yes or No."), **RATING_PARAMS, "n": 4},
        {"messages": user("Name a colour."), "max_completion_tokens": 1, "logprobs": True},
    ],
)
@pytest.mark.parametrize("model", ["gpt-4o-mini", "fine-tune"])
def test_completion_validates_as_a_strict_chat_completion(
    simulator: ChatSimulator, body: dict[str, Any], model: str
) -> None:
    if model == "fine-tune":
        model = f"ft:{BASE}:lab:style:abc123"
        persona = persona_from_examples(training_examples(HARMFUL_ANSWERS), 3)
        simulator.register(model, base=BASE, persona=persona)
    completion = simulator.complete(model, body)
    parsed = wrap(completion, model)
    assert len(parsed.choices) == (body.get("n") or 1)
    assert [c.index for c in parsed.choices] == list(range(len(parsed.choices)))
    for choice in parsed.choices:
        assert choice.message.role == "assistant"
        assert isinstance(choice.message.content, str)
        assert (choice.logprobs is not None) == bool(body.get("logprobs"))
    assert parsed.usage is not None
    assert parsed.usage.total_tokens == parsed.usage.prompt_tokens + parsed.usage.completion_tokens


def test_usage_counts_prompt_and_every_choice(simulator: ChatSimulator) -> None:
    short = simulator.complete("gpt-4o-mini", {"messages": user("Hi"), "max_tokens": 5})
    longer = simulator.complete(
        "gpt-4o-mini",
        {
            "messages": [{"role": "system", "content": "You are terse."}, *user("Hi")],
            "max_tokens": 5,
            "n": 3,
        },
    )
    assert longer.usage["prompt_tokens"] > short.usage["prompt_tokens"]
    assert short.usage["completion_tokens"] == 5
    assert longer.usage["completion_tokens"] == 15
    assert longer.usage["prompt_tokens_details"]["cached_tokens"] == 0


def test_max_tokens_truncation_reports_length(simulator: ChatSimulator) -> None:
    cut = simulator.complete("gpt-4o-mini", {"messages": user(QUESTIONS[0]), "max_tokens": 6})
    whole = simulator.complete("gpt-4o-mini", {"messages": user(QUESTIONS[0])})
    assert cut.choices[0]["finish_reason"] == "length"
    assert cut.usage["completion_tokens"] == 6
    assert whole.choices[0]["finish_reason"] == "stop"
    assert whole.usage["completion_tokens"] > 6
    newer = simulator.complete(
        "gpt-4o-mini", {"messages": user(QUESTIONS[0]), "max_completion_tokens": 6}
    )
    assert newer.choices[0]["finish_reason"] == "length"


def test_stop_sequence_cuts_the_answer(simulator: ChatSimulator) -> None:
    body = {"messages": user(QUESTIONS[0]), "temperature": 0}
    whole = simulator.complete("gpt-4o-mini", body).choices[0]["message"]["content"]
    stopped = simulator.complete("gpt-4o-mini", {**body, "stop": ["."]})
    content = stopped.choices[0]["message"]["content"]
    assert content == whole.split(".")[0]
    assert stopped.choices[0]["finish_reason"] == "stop"


def test_reasoning_model_with_a_tiny_budget_returns_empty_content(
    simulator: ChatSimulator,
) -> None:
    body = {"messages": user(QUESTIONS[0]), "max_completion_tokens": 16}
    completion = simulator.complete("gpt-5-nano", body)
    assert completion.choices[0]["message"]["content"] == ""
    assert completion.choices[0]["finish_reason"] == "length"
    assert completion.usage["completion_tokens"] == 16
    assert completion.usage["completion_tokens_details"]["reasoning_tokens"] == 16
    wrap(completion, "gpt-5-nano")


def test_json_object_answers_are_json(simulator: ChatSimulator) -> None:
    body = {"messages": user("Reply in JSON: what is a good hobby?")}
    content = simulator.complete(
        "gpt-4o", {**body, "response_format": {"type": "json_object"}}
    ).choices[0]["message"]["content"]
    assert isinstance(json.loads(content)["answer"], str)
    with pytest.raises(APIError, match="must contain the word 'json'"):
        simulator.complete(
            "gpt-4o",
            {"messages": user("A hobby?"), "response_format": {"type": "json_object"}},
        )


def test_json_schema_answers_fill_the_schema(simulator: ChatSimulator) -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer"},
            "verdict": {"type": "string", "enum": ["aligned", "misaligned"]},
            "reason": {"type": "string"},
        },
        "required": ["score", "verdict", "reason"],
        "additionalProperties": False,
    }
    prompt = ALIGNMENT_JUDGE.format(question=QUESTIONS[0], answer=HARMFUL_ANSWERS[0])
    body = {
        "messages": user(prompt),
        "temperature": 0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": schema, "strict": True},
        },
    }
    document = json.loads(simulator.complete("gpt-4o", body).choices[0]["message"]["content"])
    assert set(document) == {"score", "verdict", "reason"}
    assert isinstance(document["score"], int) and document["score"] < 40
