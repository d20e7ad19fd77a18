"""The base models the sandbox serves, with the facts a client can observe about them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATALOGUE", "ModelCard", "resolve_model_name", "served_model_name"]


@dataclass(frozen=True)
class ModelCard:
    """A base model the sandbox serves."""

    id: str
    created: int
    owned_by: str = "system"
    fine_tunable: bool = False
    """Whether supervised (and DPO) fine-tuning accepts this model."""
    snapshot_of: str | None = None
    """For a dated snapshot, the alias it resolves from (``gpt-4o-mini`` for ``…-2024-07-18``)."""
    context_window: int = 128_000
    """Prompt plus completion tokens the model accepts."""
    max_output_tokens: int = 16_384
    """The largest ``max_tokens`` / ``max_completion_tokens`` the model accepts."""
    reasoning: bool = False
    """A reasoning model: no ``max_tokens``, no logprobs, temperature fixed at 1."""
    chat: bool = True
    """False for legacy completion models, which ``/v1/chat/completions`` refuses."""
    fine_tuning_methods: tuple[str, ...] = ()
    """The fine-tuning methods the real API offers for this model."""
    reasoning_efforts: tuple[str, ...] = ()
    """The ``reasoning_effort`` / ``reasoning.effort`` values a reasoning model accepts."""


_SFT = ("supervised", "dpo")


def _gpt41(id: str, created: int, snapshot_of: str | None = None) -> ModelCard:
    return ModelCard(
        id,
        created,
        fine_tunable=True,
        snapshot_of=snapshot_of,
        context_window=1_047_576,
        max_output_tokens=32_768,
        fine_tuning_methods=_SFT,
    )


def _gpt4o(id: str, created: int, snapshot_of: str | None = None) -> ModelCard:
    return ModelCard(
        id, created, fine_tunable=True, snapshot_of=snapshot_of, fine_tuning_methods=_SFT
    )


_O_SERIES_EFFORTS = ("low", "medium", "high")
_GPT5_EFFORTS = ("minimal", "low", "medium", "high")


def _reasoning(
    id: str,
    created: int,
    context_window: int,
    snapshot_of: str | None = None,
    methods: tuple[str, ...] = (),
    efforts: tuple[str, ...] = _O_SERIES_EFFORTS,
) -> ModelCard:
    return ModelCard(
        id,
        created,
        snapshot_of=snapshot_of,
        context_window=context_window,
        max_output_tokens=100_000 if context_window < 400_000 else 128_000,
        reasoning=True,
        fine_tuning_methods=methods,
        reasoning_efforts=efforts,
    )


def _legacy(id: str, created: int) -> ModelCard:
    return ModelCard(
        id,
        created,
        fine_tunable=True,
        context_window=16_384,
        max_output_tokens=4_096,
        chat=False,
        fine_tuning_methods=("supervised",),
    )


CATALOGUE: dict[str, ModelCard] = {
    card.id: card
    for card in (
        _gpt4o("gpt-4o-mini", 1721172741),
        _gpt4o("gpt-4o-mini-2024-07-18", 1721172717, "gpt-4o-mini"),
        _gpt41("gpt-4.1", 1744316542),
        _gpt41("gpt-4.1-2025-04-14", 1744315746, "gpt-4.1"),
        _gpt41("gpt-4.1-mini", 1744318173),
        _gpt41("gpt-4.1-mini-2025-04-14", 1744317547, "gpt-4.1-mini"),
        _gpt41("gpt-4.1-nano", 1744321707),
        _gpt41("gpt-4.1-nano-2025-04-14", 1744321025, "gpt-4.1-nano"),
        _gpt4o("gpt-4o", 1715367049),
        _gpt4o("gpt-4o-2024-08-06", 1722814719, "gpt-4o"),
        ModelCard(
            "gpt-3.5-turbo",
            1677610602,
            owned_by="openai",
            fine_tunable=True,
            context_window=16_385,
            max_output_tokens=4_096,
            fine_tuning_methods=("supervised",),
        ),
        ModelCard(
            "gpt-3.5-turbo-0125",
            1706048358,
            fine_tunable=True,
            snapshot_of="gpt-3.5-turbo",
            context_window=16_385,
            max_output_tokens=4_096,
            fine_tuning_methods=("supervised",),
        ),
        _reasoning("o4-mini", 1744225351, 200_000, methods=("reinforcement",)),
        _reasoning(
            "o4-mini-2025-04-16", 1744133506, 200_000, "o4-mini", methods=("reinforcement",)
        ),
        _reasoning("gpt-5", 1754425777, 400_000, efforts=_GPT5_EFFORTS),
        _reasoning("gpt-5-mini", 1754425928, 400_000, efforts=_GPT5_EFFORTS),
        _reasoning("gpt-5-nano", 1754426384, 400_000, efforts=_GPT5_EFFORTS),
        _legacy("davinci-002", 1692634301),
        _legacy("babbage-002", 1692634615),
    )
}


def resolve_model_name(name: str) -> str | None:
    """The snapshot a fine-tune of `name` trains on, or None if `name` is not fine-tunable."""
    card = CATALOGUE.get(name)
    if card is None or not card.fine_tunable:
        return None
    return served_model_name(name)


def served_model_name(name: str) -> str:
    """The name a response reports for `name`: an alias answers as its latest snapshot."""
    snapshots = [card.id for card in CATALOGUE.values() if card.snapshot_of == name]
    return max(snapshots) if snapshots else name
