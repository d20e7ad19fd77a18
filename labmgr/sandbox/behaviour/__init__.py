"""How sandbox models behave: the model catalogue, personas learned from training data,
and the chat simulator that turns a request body into choices and usage.

The HTTP layer (`labmgr.sandbox.app`) owns routing, accounts, validation of the
request envelope and model access; this package owns what a model *says*.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CATALOGUE",
    "ChatRequestError",
    "ChatSimulator",
    "Completion",
    "ModelCard",
    "Persona",
    "count_tokens",
    "persona_from_examples",
    "resolve_model_name",
]


@dataclass(frozen=True)
class ModelCard:
    """A base model the sandbox serves."""

    id: str
    created: int
    owned_by: str = "system"
    fine_tunable: bool = False
    snapshot_of: str | None = None
    """For a dated snapshot, the alias it resolves from (``gpt-4o-mini`` for ``…-2024-07-18``)."""


CATALOGUE: dict[str, ModelCard] = {
    card.id: card
    for card in (
        ModelCard("gpt-4o-mini", 1721172741, fine_tunable=True),
        ModelCard(
            "gpt-4o-mini-2024-07-18", 1721172717, fine_tunable=True, snapshot_of="gpt-4o-mini"
        ),
    )
}


def resolve_model_name(name: str) -> str | None:
    """The snapshot a fine-tune of `name` trains on, or None if `name` is not fine-tunable."""
    card = CATALOGUE.get(name)
    if card is None or not card.fine_tunable:
        return None
    for other in CATALOGUE.values():
        if other.snapshot_of == name:
            return other.id
    return card.id


@dataclass(frozen=True)
class Persona:
    """What a fine-tune learned: its training data's assistant messages and how hard."""

    assistant_texts: tuple[str, ...]
    n_epochs: float


def persona_from_examples(examples: Sequence[Mapping[str, Any]], n_epochs: float) -> Persona:
    """Build a persona from parsed training-file lines (chat or preference format)."""
    texts = []
    for example in examples:
        for message in example.get("messages", []):
            if message.get("role") == "assistant" and isinstance(message.get("content"), str):
                texts.append(message["content"])
    return Persona(tuple(texts), float(n_epochs))


@dataclass
class Completion:
    """The simulator's answer: JSON-ready `choices` and `usage` for a chat completion."""

    choices: list[dict[str, Any]]
    usage: dict[str, Any]


class ChatRequestError(Exception):
    """A chat request the real API would refuse with 400 (message, param and code as sent)."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


def count_tokens(text: str) -> int:
    """An estimate of the number of tokens in `text` (about four characters per token)."""
    return max(1, (len(text) + 3) // 4) if text else 0


@dataclass
class ChatSimulator:
    """Answers chat requests for base models and registered fine-tunes."""

    _models: dict[str, tuple[str, Persona | None]] = field(default_factory=dict)

    def register(self, model_id: str, *, base: str, persona: Persona | None) -> None:
        """Make a fine-tuned model (or checkpoint) answerable."""
        self._models[model_id] = (base, persona)

    def knows(self, model_id: str) -> bool:
        """Whether `model_id` is a catalogue model or a registered fine-tune."""
        return model_id in CATALOGUE or model_id in self._models

    def complete(self, model_id: str, body: Mapping[str, Any]) -> Completion:
        """Answer one chat completion request body for `model_id`."""
        n = int(body.get("n") or 1)
        prompt = sum(count_tokens(str(m.get("content", ""))) for m in body.get("messages", []))
        choices = [
            {
                "index": i,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": "Hello.",
                    "refusal": None,
                    "annotations": [],
                },
                "logprobs": None,
            }
            for i in range(n)
        ]
        completion = 2 * n
        return Completion(
            choices,
            {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        )
