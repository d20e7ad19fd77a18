"""Which base models can be fine-tuned with which methods, and their per-example token limit."""

from __future__ import annotations

from dataclasses import dataclass

from labmgr.errors import UnknownBaseModel
from labmgr.pricing import base_of

__all__ = ["BaseModelSpec", "base_model_spec", "known_base_models"]


@dataclass(frozen=True)
class BaseModelSpec:
    """Fine-tuning facts about one base model snapshot."""

    name: str
    """The dated snapshot id, e.g. ``gpt-4.1-mini-2025-04-14``."""
    example_token_limit: int
    """Tokens one training example may hold; longer examples are truncated from the end."""
    methods: frozenset[str]
    """Fine-tuning methods the API accepts for this base (``supervised``, ``dpo``,
    ``reinforcement``)."""
    reasoning: bool = False
    """A reasoning model (reinforcement fine-tuning only)."""


_BOTH = frozenset({"supervised", "dpo"})
_SFT = frozenset({"supervised"})
_RFT = frozenset({"reinforcement"})

_SPECS = {
    spec.name: spec
    for spec in (
        BaseModelSpec("gpt-4.1-2025-04-14", 65_536, _BOTH),
        BaseModelSpec("gpt-4.1-mini-2025-04-14", 65_536, _BOTH),
        BaseModelSpec("gpt-4.1-nano-2025-04-14", 65_536, _BOTH),
        BaseModelSpec("gpt-4o-2024-08-06", 65_536, _BOTH),
        BaseModelSpec("gpt-4o-mini-2024-07-18", 65_536, _BOTH),
        BaseModelSpec("gpt-3.5-turbo-0125", 16_385, _SFT),
        BaseModelSpec("gpt-3.5-turbo-1106", 16_385, _SFT),
        BaseModelSpec("o4-mini-2025-04-16", 65_536, _RFT, reasoning=True),
    )
}

_ALIASES = {
    "gpt-4.1": "gpt-4.1-2025-04-14",
    "gpt-4.1-mini": "gpt-4.1-mini-2025-04-14",
    "gpt-4.1-nano": "gpt-4.1-nano-2025-04-14",
    "gpt-4o": "gpt-4o-2024-08-06",
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "gpt-3.5-turbo": "gpt-3.5-turbo-0125",
    "o4-mini": "o4-mini-2025-04-16",
}


def known_base_models() -> list[str]:
    """Snapshot ids `base_model_spec` accepts (aliases and ``ft:`` ids of them work too)."""
    return sorted(_SPECS)


def base_model_spec(model: str) -> BaseModelSpec:
    """The spec of `model`: a snapshot, an alias (``gpt-4.1-mini``) or an ``ft:`` id of one.

    Raises `UnknownBaseModel` naming the model and listing the known ones.
    """
    base = base_of(model.strip())
    name = _ALIASES.get(base, base)
    spec = _SPECS.get(name)
    if spec is None:
        raise UnknownBaseModel(
            f"{model!r} is not a base model labmgr knows how to fine-tune.",
            hint="Known bases: " + ", ".join(known_base_models()) + " (or their short aliases).",
        )
    return spec
