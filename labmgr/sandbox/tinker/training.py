"""The fake models: the base models served, per-token log-probabilities that rise as training
goes on, and the persona a checkpoint answers with (what its training tokens said, how often)."""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Mapping, Sequence

from labmgr.sandbox.behaviour import ModelCard, Persona

from .tokenizer import decode

BASE_MODELS: dict[str, int] = {
    "Qwen/Qwen3-8B": 32_768,
    "Qwen/Qwen3-30B-A3B": 32_768,
    "meta-llama/Llama-3.1-8B-Instruct": 131_072,
}
"""Base model → context length (`supported_models`). Each declares the local tokenizer."""
FLOOR = 0.12
"""The share of the untrained loss that no amount of training removes."""
REFERENCE_LR = 1e-4
"""A step at this learning rate moves training by `STEP_PROGRESS`."""
STEP_PROGRESS = 0.25


def base_card(name: str) -> ModelCard:
    """The simulator card of a base model (it answers like any sandbox base model)."""
    return ModelCard(name, 1_746_000_000, "tinker", None, BASE_MODELS[name], BASE_MODELS[name])


def progress_of_step(learning_rate: float) -> float:
    """How far one optimizer step at `learning_rate` moves training (capped at 3 × normal)."""
    return STEP_PROGRESS * min(3.0, max(0.0, learning_rate) / REFERENCE_LR)


def target_logprobs(seed: int, progress: float, tokens: Sequence[int]) -> list[float]:
    """The log-probability of each token given the previous one: a deterministic draw per
    (seed, previous token, token) from [-4, -0.5], shrunk towards 0 by training `progress`."""
    scale = FLOOR + (1.0 - FLOOR) * math.exp(-progress)
    out = []
    previous = -1
    for token in tokens:
        draw = zlib.crc32(struct.pack("<qqq", seed, previous, token)) / 0xFFFFFFFF
        out.append(-(0.5 + 3.5 * draw) * scale)
        previous = token
    return out


def trained_texts(targets: Sequence[int], weights: Sequence[float]) -> list[str]:
    """The texts a datum trains on: each run of targets with weight > 0, decoded."""
    texts: list[str] = []
    run: list[int] = []
    for token, weight in zip(targets, weights, strict=False):
        if weight > 0:
            run.append(token)
        elif run:
            texts.append(decode(run))
            run = []
    if run:
        texts.append(decode(run))
    return [t.strip() for t in texts if t.strip()]


def persona_of(trained: Mapping[str, int]) -> Persona | None:
    """A persona from the texts trained on and how often: its epochs are the mean count."""
    if not trained:
        return None
    return Persona(tuple(trained), sum(trained.values()) / len(trained))
