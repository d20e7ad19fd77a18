"""How sandbox models behave: the model catalogue, personas learned from training data,
and the chat simulator that turns a request body into choices and usage.

The HTTP layer (the rest of `labmgr.sandbox`) owns routing, accounts, the request envelope
and model access; this package owns what a model *says*. It is pure Python and imports nothing
from the rest of labmgr.
"""

from __future__ import annotations

from .catalogue import CATALOGUE, ModelCard, served_model_name
from .choices import JUDGE_ERROR
from .persona import Persona, drift_probability, persona_from_examples
from .plan import JudgeSettings, prompt_tokens
from .request import ChatRequest
from .simulator import ChatSimulator, Completion
from .text import content_text, count_tokens

__all__ = [
    "CATALOGUE",
    "JUDGE_ERROR",
    "ChatRequest",
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
