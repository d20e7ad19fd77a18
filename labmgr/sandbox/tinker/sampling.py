"""`asample`: a prompt's tokens become a chat request for the simulator, and its answers
become sampled token sequences (the `SampleResponse` protobuf)."""

from __future__ import annotations

import math
from typing import Any

from labmgr.sandbox.behaviour import ChatSimulator
from labmgr.sandbox.errors import bad_request

from .tokenizer import END_OF_TURN, encode, parse_chat
from .training import target_logprobs
from .wire import encode_sample_response

_ROLES = ("system", "user", "assistant")
DEFAULT_MAX_TOKENS = 256


def _prompt_tokens(prompt: Any) -> list[int]:
    chunks = prompt.get("chunks") if isinstance(prompt, dict) else None
    if not isinstance(chunks, list):
        raise bad_request("Invalid 'prompt': expected an object with a list of chunks.")
    tokens: list[int] = []
    for chunk in chunks:
        if not isinstance(chunk, dict) or chunk.get("type") != "encoded_text":
            raise bad_request("The sandbox samples from encoded_text prompt chunks only.")
        tokens += [int(t) for t in chunk.get("tokens") or ()]
    return tokens


def sample(simulator: ChatSimulator, served: str, body: dict[str, Any]) -> tuple[bytes, int]:
    """The `SampleResponse` for an `asample` body answered by the simulator's model `served`
    (a base model, checkpoint path or sampler id), and the number of sequences in it."""
    prompt = _prompt_tokens(body.get("prompt"))
    params = body.get("sampling_params")
    params = params if isinstance(params, dict) else {}
    max_tokens = params.get("max_tokens") or DEFAULT_MAX_TOKENS
    count = body.get("num_samples", 1)
    if not isinstance(count, int) or not 1 <= count <= 128:
        raise bad_request("Invalid 'num_samples': expected an integer from 1 to 128.")
    chat: dict[str, Any] = {
        "messages": [
            {"role": role if role in _ROLES else "user", "content": text}
            for role, text in parse_chat(prompt)
        ],
        "n": count,
        "max_tokens": max_tokens,
        "temperature": min(2.0, max(0.0, float(params.get("temperature", 1.0)))),
    }
    if isinstance(params.get("seed"), int):
        chat["seed"] = params["seed"]
    stop = params.get("stop")
    stops = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    if all(isinstance(s, str) for s in stops) and stops:
        chat["stop"] = stops[:4]
    completion = simulator.complete(served, chat)
    sequences = []
    for choice in completion.choices:
        tokens = encode(choice["message"]["content"] or "")
        by_length = len(tokens) >= max_tokens or choice["finish_reason"] == "length"
        tokens = tokens[:max_tokens]
        if not by_length:
            tokens.append(END_OF_TURN)
        sequences.append((by_length, tokens, target_logprobs(0, 3.0, tokens)))
    prompt_logprobs = None
    if body.get("prompt_logprobs"):
        prompt_logprobs = [math.nan, *target_logprobs(0, 0.0, prompt)[1:]]
    return encode_sample_response(sequences, prompt_logprobs), len(sequences)
