"""Tinker's API at `<root>/tinker` for the `tinker` SDK (never imported here): sessions, LoRA
training, `tinker://` checkpoints, sampling, and the OpenAI-compatible endpoint at
`<root>/tinker/oai/api/v1`. See docs/design/tinker-sandbox.md."""

from .service import TinkerService
from .tokenizer import SPECIAL_TOKENS, decode, encode, render_chat, write_tokenizer
from .training import BASE_MODELS

__all__ = [
    "BASE_MODELS",
    "SPECIAL_TOKENS",
    "TinkerService",
    "decode",
    "encode",
    "render_chat",
    "write_tokenizer",
]
