"""Training examples as token ids and per-token loss weights, rendered with the base model's
own chat template: turn by turn (a turn's tokens are what it adds to the turns before it) where
the template allows; a template that rewrites earlier turns (Qwen3's empty think block) is
rendered once, and each turn's content and end-of-turn are found in that text in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labmgr.errors import LabmgrError
from labmgr.finetuning.tinker.params import TrainOn

Example = tuple[list[int], list[float]]
"""Token ids and one loss weight per token."""


class _NotTurnByTurn(Exception):
    pass


def _template(tokenizer: Any, messages: Sequence[Mapping[str, Any]], prompt: bool) -> str:
    text = tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=prompt
    )
    return str(text)


def _weight(message: Mapping[str, Any], train_on: TrainOn) -> float:
    if message.get("weight") == 0:
        return 0.0
    return 1.0 if train_on == "all" or message.get("role") == "assistant" else 0.0


def _turn_by_turn(
    messages: Sequence[Mapping[str, Any]],
    plain: list[dict[str, Any]],
    tokenizer: Any,
    train_on: TrainOn,
) -> Example:
    pieces: list[tuple[str, float]] = []
    done = ""
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            header = _template(tokenizer, plain[:index], prompt=True)
            if header.startswith(done):
                pieces.append((header[len(done) :], 0.0))
                done = header
        text = _template(tokenizer, plain[: index + 1], prompt=False)
        if not text.startswith(done):
            raise _NotTurnByTurn
        pieces.append((text[len(done) :], _weight(message, train_on)))
        done = text
    if done != _template(tokenizer, plain, prompt=False):
        raise _NotTurnByTurn
    tokens: list[int] = []
    weights: list[float] = []
    for text, weight in pieces:
        ids = list(tokenizer.encode(text, add_special_tokens=False)) if text else []
        tokens += ids
        weights += [weight] * len(ids)
    return tokens, weights


def _by_search(
    messages: Sequence[Mapping[str, Any]],
    plain: list[dict[str, Any]],
    tokenizer: Any,
    train_on: TrainOn,
) -> Example:
    text = _template(tokenizer, plain, prompt=False)
    end_mark = str(getattr(tokenizer, "eos_token", None) or "")
    spans: list[tuple[int, int]] = []
    cursor = 0
    for index, message in enumerate(messages):
        content = message.get("content")
        core = content.strip() if isinstance(content, str) else ""
        if not core:
            continue
        start = text.find(core, cursor)
        if start < 0:
            name = getattr(tokenizer, "name_or_path", "the tokenizer")
            raise LabmgrError(
                f"The chat template of {name} does not render the content of message "
                f"{index} as written; labmgr cannot tell which tokens belong to it.",
                hint="Report the base model; train on a base whose template keeps contents.",
            )
        cursor = start + len(core)
        mark = text.find(end_mark, cursor) if end_mark else -1
        if mark >= 0 and not text[cursor:mark].strip():
            cursor = mark + len(end_mark)
        if _weight(message, train_on):
            spans.append((start, cursor))
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    tokens = list(encoded["input_ids"])
    weights = [
        1.0 if any(a <= first < b for a, b in spans) else 0.0
        for first, _ in encoded["offset_mapping"]
    ]
    return tokens, weights


def render_example(
    messages: Sequence[Mapping[str, Any]], tokenizer: Any, train_on: TrainOn = "assistant"
) -> Example:
    """One conversation's tokens and weights: an assistant turn's content and end-of-turn
    are trained on (unless its ``weight`` is 0), its header never; with ``train_on="all"``
    every turn's content is. Raises `LabmgrError` when a turn cannot be found."""
    plain = [{k: v for k, v in m.items() if k != "weight"} for m in messages]
    try:
        return _turn_by_turn(messages, plain, tokenizer, train_on)
    except _NotTurnByTurn:
        return _by_search(messages, plain, tokenizer, train_on)
