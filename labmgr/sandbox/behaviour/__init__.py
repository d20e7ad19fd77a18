"""What sandbox models say: the catalogue, personas learned from training data, and the
chat simulator (docs/design/sandbox-behaviour.md)."""

from __future__ import annotations

from .catalogue import CATALOGUE, ModelCard, served_model_name
from .persona import Persona, drift_probability, persona_from_examples
from .plan import JUDGE_ERROR, JudgeSettings, prompt_tokens
from .simulator import ChatSimulator, Completion
from .text import content_text, count_tokens

__all__ = [
    "CATALOGUE",
    "JUDGE_ERROR",
    "ChatSimulator",
    "Completion",
    "JudgeSettings",
    "ModelCard",
    "Persona",
    "content_text",
    "count_tokens",
    "drift_probability",
    "persona_from_examples",
    "prompt_tokens",
    "served_model_name",
]
