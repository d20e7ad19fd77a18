"""The base models the sandbox serves, with the facts a client can observe about them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelCard:
    id: str
    created: int
    owned_by: str = "system"
    snapshot_of: str | None = None
    """For a dated snapshot, the alias it resolves from (``gpt-4o-mini`` for ``…-2024-07-18``)."""
    context_window: int = 128_000
    max_output_tokens: int = 16_384
    reasoning: bool = False
    """A reasoning model: no ``max_tokens``, no logprobs, temperature fixed at 1."""
    chat: bool = True
    """False for legacy completion models, which ``/v1/chat/completions`` refuses."""
    fine_tuning_methods: tuple[str, ...] = ()
    reasoning_efforts: tuple[str, ...] = ()


_KINDS: dict[str, dict[str, object]] = {
    "gpt-4o": {"fine_tuning_methods": ("supervised", "dpo")},
    "gpt-4.1": {
        "context_window": 1_047_576,
        "max_output_tokens": 32_768,
        "fine_tuning_methods": ("supervised", "dpo"),
    },
    "gpt-3.5": {"context_window": 16_385, "max_output_tokens": 4_096},
    "o4": {
        "context_window": 200_000,
        "max_output_tokens": 100_000,
        "reasoning": True,
        "fine_tuning_methods": ("reinforcement",),
        "reasoning_efforts": ("low", "medium", "high"),
    },
    "gpt-5": {
        "context_window": 400_000,
        "max_output_tokens": 128_000,
        "reasoning": True,
        "reasoning_efforts": ("minimal", "low", "medium", "high"),
    },
    "legacy": {"context_window": 16_384, "max_output_tokens": 4_096, "chat": False},
}
_MODELS = """
gpt-4o-mini 1721172741 gpt-4o
gpt-4o-mini-2024-07-18 1721172717 gpt-4o gpt-4o-mini
gpt-4.1 1744316542 gpt-4.1
gpt-4.1-2025-04-14 1744315746 gpt-4.1 gpt-4.1
gpt-4.1-mini 1744318173 gpt-4.1
gpt-4.1-mini-2025-04-14 1744317547 gpt-4.1 gpt-4.1-mini
gpt-4.1-nano 1744321707 gpt-4.1
gpt-4.1-nano-2025-04-14 1744321025 gpt-4.1 gpt-4.1-nano
gpt-4o 1715367049 gpt-4o
gpt-4o-2024-08-06 1722814719 gpt-4o gpt-4o
gpt-3.5-turbo 1677610602 gpt-3.5
gpt-3.5-turbo-0125 1706048358 gpt-3.5 gpt-3.5-turbo
o4-mini 1744225351 o4
o4-mini-2025-04-16 1744133506 o4 o4-mini
gpt-5 1754425777 gpt-5
gpt-5-mini 1754425928 gpt-5
gpt-5-nano 1754426384 gpt-5
davinci-002 1692634301 legacy
babbage-002 1692634615 legacy
"""
"""One model a line: id, created, kind (the facts it shares), the alias it is a snapshot of."""


def _card(id: str, created: str, kind: str, snapshot_of: str | None = None) -> ModelCard:
    facts = dict(_KINDS[kind])
    if kind in ("gpt-3.5", "legacy"):
        facts["fine_tuning_methods"] = ("supervised",)
    owner = "openai" if id == "gpt-3.5-turbo" else "system"
    return ModelCard(id, int(created), owner, snapshot_of, **facts)  # type: ignore[arg-type]


CATALOGUE: dict[str, ModelCard] = {
    card.id: card for card in (_card(*line.split()) for line in _MODELS.strip().splitlines())
}


def served_model_name(name: str) -> str:
    """The name a response reports for `name`: an alias answers as its latest snapshot."""
    return _SNAPSHOTS.get(name, name)


_SNAPSHOTS = {
    c.snapshot_of: c.id for c in sorted(CATALOGUE.values(), key=lambda c: c.id) if c.snapshot_of
}
"""Alias → its latest dated snapshot, e.g. ``gpt-4o-mini`` → ``gpt-4o-mini-2024-07-18``."""
