"""SSE frames built from a completion with logprobs validate as SDK chunks."""

from __future__ import annotations

import json

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from labmgr.sandbox.streaming import stream_frames


def _token(text: str, logprob: float) -> dict:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode())}


RESPONSE = {
    "id": "chatcmpl-x",
    "object": "chat.completion",
    "created": 1767230000,
    "model": "gpt-4o-mini-2024-07-18",
    "service_tier": "default",
    "system_fingerprint": "fp_0abc",
    "choices": [
        {
            "index": i,
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": "Yes sir",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": {
                "content": [
                    {
                        **_token("Yes", -0.01),
                        "top_logprobs": [_token("Yes", -0.01), _token("No", -4.5)],
                    },
                    {**_token(" sir", -0.2), "top_logprobs": [_token(" sir", -0.2)]},
                ],
                "refusal": None,
            },
        }
        for i in range(2)
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
}


def _chunks(include_usage: bool) -> list[ChatCompletionChunk]:
    frames = stream_frames(RESPONSE, include_usage)
    assert frames[-1] == b"data: [DONE]\n\n"
    assert all(f.startswith(b"data: ") and f.endswith(b"\n\n") for f in frames)
    return [ChatCompletionChunk.model_validate(json.loads(f[6:])) for f in frames[:-1]]


def test_the_response_fixture_is_a_valid_completion() -> None:
    ChatCompletion.model_validate(RESPONSE)


def test_one_chunk_per_token_carries_its_logprobs() -> None:
    chunks = _chunks(include_usage=False)
    for index in (0, 1):
        mine = [c.choices[0] for c in chunks if c.choices[0].index == index]
        assert "".join(c.delta.content or "" for c in mine) == "Yes sir"
        tokens = [c.logprobs.content[0].token for c in mine if c.logprobs and c.logprobs.content]
        assert tokens == ["Yes", " sir"]
        assert mine[-1].finish_reason == "stop"


def test_usage_arrives_last_with_no_choices() -> None:
    chunks = _chunks(include_usage=True)
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 9
    assert all(c.usage is None for c in chunks[:-1])
