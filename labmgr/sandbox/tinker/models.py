"""The base models the sandbox's Tinker serves (`supported_models` in its capabilities)."""

from __future__ import annotations

from labmgr.sandbox.behaviour import ModelCard

__all__ = ["BASE_MODELS", "base_card"]

BASE_MODELS: dict[str, int] = {
    "Qwen/Qwen3-8B": 32_768,
    "Qwen/Qwen3-30B-A3B": 32_768,
    "meta-llama/Llama-3.1-8B-Instruct": 131_072,
}
"""Base model → context length. Each declares the sandbox's local tokenizer."""
_CREATED = 1_746_000_000


def base_card(name: str) -> ModelCard:
    """The simulator card of a base model (it answers like any sandbox base model)."""
    context = BASE_MODELS[name]
    return ModelCard(name, _CREATED, "tinker", None, context, context)
