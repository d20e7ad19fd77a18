"""The sandbox's Tinker tokenizer: one token per UTF-8 byte plus three special tokens, as files
`transformers.AutoTokenizer` loads offline (`write_tokenizer`) and as code without transformers;
`render_chat` writes its ChatML-like chat format (also the folder's `chat_template`)."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from labmgr.sandbox.store import atomic_write

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Special tokens, with ids 256, 257 and 258."""
START_OF_TURN, END_OF_TURN = 257, 258
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
VERSION = 2
"""Bump when the files change: the default folder's name carries it."""


def _byte_symbols() -> list[str]:
    """GPT-2's byte-level alphabet: a printable character standing for each byte."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def _tokenizer_json() -> dict[str, Any]:
    """The least `tokenizers` loads: a byte-level BPE without merges (other fields default)."""
    vocab = {symbol: byte for byte, symbol in enumerate(_byte_symbols())}
    flags = dict.fromkeys(("single_word", "lstrip", "rstrip", "normalized"), False)
    added = [
        {"id": 256 + index, "content": token, "special": True, **flags}
        for index, token in enumerate(SPECIAL_TOKENS)
    ]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
    return {
        "added_tokens": added,
        "pre_tokenizer": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    }


def write_tokenizer(folder: str | Path) -> Path:
    """Write the tokenizer files into `folder` (created; rewritten only if they differ) and
    return its absolute path, which is what a base model's `tokenizer_id` names."""
    folder = Path(folder).resolve()
    files = {
        "tokenizer.json": json.dumps(_tokenizer_json(), ensure_ascii=False),
        "tokenizer_config.json": json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": None,
                "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>",
                "model_max_length": 32768,
                "clean_up_tokenization_spaces": False,
                "chat_template": CHAT_TEMPLATE,
            }
        ),
    }
    for name, text in files.items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            atomic_write(path, text.encode())
    return folder


def default_tokenizer_folder() -> Path:
    """Where a sandbox writes the tokenizer when nothing else is said: the temp folder."""
    return Path(tempfile.gettempdir()) / f"labmgr-tinker-tokenizer-v{VERSION}"


def encode(text: str) -> list[int]:
    """The token ids of plain text (special tokens in it are encoded as their bytes)."""
    return list(text.encode("utf-8", "surrogatepass"))


def decode(tokens: Sequence[int], *, skip_special: bool = True) -> str:
    """The text of token ids; special tokens are dropped (or written out) and ids out of the
    vocabulary are dropped."""
    out = bytearray()
    for token in tokens:
        if 0 <= token < 256:
            out.append(token)
        elif not skip_special and 256 <= token < 256 + len(SPECIAL_TOKENS):
            out += SPECIAL_TOKENS[token - 256].encode()
    return out.decode("utf-8", "replace")


def render_chat(
    messages: Sequence[Mapping[str, Any]], tokenizer: Any = None
) -> tuple[list[int], list[float]]:
    """A conversation as tokens and a per-token training weight: 1 on assistant content and
    its end-of-turn token (unless the message has ``"weight": 0``), 0 elsewhere. `tokenizer`
    has transformers' `encode` (None: the sandbox's). To train: input `tokens[:-1]`, targets
    `tokens[1:]`, weights `weights[1:]`."""

    def tokens_of(text: str) -> list[int]:
        if tokenizer is None:
            parts = re.split(r"(<\|im_start\|>|<\|im_end\|>)", text)
            special = {"<|im_start|>": START_OF_TURN, "<|im_end|>": END_OF_TURN}
            return [t for p in parts for t in ([special[p]] if p in special else encode(p))]
        return list(tokenizer.encode(text, add_special_tokens=False))

    tokens: list[int] = []
    weights: list[float] = []
    for message in messages:
        role = str(message.get("role", "user"))
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        default = 1.0 if role == "assistant" else 0.0
        weight = float(message.get("weight", default)) if role == "assistant" else 0.0
        for piece, piece_weight in (
            (f"<|im_start|>{role}\n", 0.0),
            (f"{text}<|im_end|>", weight),
            ("\n", 0.0),
        ):
            ids = tokens_of(piece)
            tokens += ids
            weights += [piece_weight] * len(ids)
    return tokens, weights


_TURN = re.compile(r"<\|im_start\|>(\w+)\n(.*?)(?:<\|im_end\|>|$)", re.DOTALL)


def parse_chat(tokens: Sequence[int]) -> list[tuple[str, str]]:
    """The (role, text) turns of a prompt in `render_chat`'s format, without a trailing empty
    assistant turn; a prompt in another format is one user turn."""
    text = decode(tokens, skip_special=False)
    turns = [(m.group(1), m.group(2)) for m in _TURN.finditer(text)]
    if turns and turns[-1][0] == "assistant" and not turns[-1][1].strip():
        turns.pop()
    if not turns:
        return [("user", decode(tokens))]
    return turns
