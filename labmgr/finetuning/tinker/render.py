"""Training examples as token ids and per-token loss weights, rendered with the base model's
own chat template (the tokenizer the training client hands out), turn by turn: each turn's
tokens are what its rendering adds to the conversation before it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labmgr.errors import LabmgrError
from labmgr.finetuning.tinker.params import TrainOn

Example = tuple[list[int], list[float]]
"""Token ids and one loss weight per token."""


def _template(tokenizer: Any, messages: Sequence[Mapping[str, Any]], prompt: bool) -> str:
    text = tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=prompt
    )
    return str(text)


def _weight(message: Mapping[str, Any], train_on: TrainOn) -> float:
    if message.get("weight") == 0:
        return 0.0
    return 1.0 if train_on == "all" or message.get("role") == "assistant" else 0.0


def render_example(
    messages: Sequence[Mapping[str, Any]], tokenizer: Any, train_on: TrainOn = "assistant"
) -> Example:
    """One conversation's tokens and weights: an assistant turn's header is never trained
    on, its content and end-of-turn are (unless its ``weight`` is 0); with ``train_on="all"``
    every turn is. Raises `LabmgrError` when the template does not render turn by turn."""
    plain = [{k: v for k, v in m.items() if k != "weight"} for m in messages]
    pieces: list[tuple[str, float]] = []
    done = ""
    for index, message in enumerate(messages):
        weight = _weight(message, train_on)
        if message.get("role") == "assistant":
            header = _template(tokenizer, plain[:index], prompt=True)
            if header.startswith(done):
                pieces.append((header[len(done) :], 0.0))
                done = header
        text = _template(tokenizer, plain[: index + 1], prompt=False)
        if not text.startswith(done):
            raise LabmgrError(
                f"The chat template of {getattr(tokenizer, 'name_or_path', 'the tokenizer')} "
                f"renders message {index} so that the conversation before it changes; labmgr "
                "cannot tell which tokens belong to which turn.",
                hint="Report the base model; train on a base with a turn-by-turn template.",
            )
        pieces.append((text[len(done) :], weight))
        done = text
    tokens: list[int] = []
    weights: list[float] = []
    for text, weight in pieces:
        ids = list(tokenizer.encode(text, add_special_tokens=False)) if text else []
        tokens += ids
        weights += [weight] * len(ids)
    return tokens, weights
