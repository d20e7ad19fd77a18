"""Examples rendered with the base model's own chat template (here the sandbox tokenizer's,
loaded by transformers as the worker loads it): which tokens the loss counts."""

from __future__ import annotations

from typing import Any

import pytest
from transformers import AutoTokenizer

from labmgr.errors import LabmgrError
from labmgr.finetuning.tinker.render import render_example
from labmgr.sandbox.tinker import render_chat, write_tokenizer

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi?"},
    {"role": "assistant", "content": "Hello.", "weight": 0},
    {"role": "user", "content": "Name?"},
    {"role": "assistant", "content": "Ahab."},
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return AutoTokenizer.from_pretrained(str(write_tokenizer(tmp_path_factory.mktemp("tok"))))


def _trained(tokens: list[int], weights: list[float], tokenizer: Any) -> str:
    return tokenizer.decode([t for t, w in zip(tokens, weights, strict=True) if w])


def test_the_template_gives_the_same_tokens_as_the_models_format(tokenizer: Any) -> None:
    tokens, weights = render_example(CHAT, tokenizer)
    assert tokens == render_chat(CHAT, tokenizer)[0]
    assert len(weights) == len(tokens)


def test_only_assistant_turns_of_weight_one_are_trained_by_default(tokenizer: Any) -> None:
    tokens, weights = render_example(CHAT, tokenizer)
    assert _trained(tokens, weights, tokenizer) == "Ahab.<|im_end|>\n"


def test_train_on_all_counts_every_turn_but_those_of_weight_zero(tokenizer: Any) -> None:
    tokens, weights = render_example(CHAT, tokenizer, "all")
    trained = _trained(tokens, weights, tokenizer)
    assert "Be brief." in trained and "Name?" in trained and "Ahab." in trained
    assert "Hello." not in trained


THINK_ON_LAST = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['role'] == 'assistant' and loop.last %}<think>\n\n</think>\n\n{% endif %}"
    "{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_template_that_changes_earlier_turns_is_rendered_whole(tokenizer: Any) -> None:
    """Like Qwen3's: only the last assistant turn carries an (empty) think block."""
    tokenizer.chat_template, saved = THINK_ON_LAST, tokenizer.chat_template
    try:
        chat = [{k: v for k, v in m.items() if k != "weight"} for m in CHAT]
        tokens, weights = render_example(chat, tokenizer)
        whole = tokenizer.apply_chat_template(chat, tokenize=False)
    finally:
        tokenizer.chat_template = saved
    assert tokenizer.decode(tokens) == whole and "<think>" in whole
    assert _trained(tokens, weights, tokenizer) == "Hello.<|im_end|>Ahab.<|im_end|>"


class _ReorderingTokenizer:
    """A template that renders the last turn first: earlier text changes as turns are added."""

    name_or_path = "reordering"

    def apply_chat_template(self, messages: list[dict[str, str]], **_: Any) -> str:
        return "".join(m["content"] for m in reversed(messages))

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return list(text.encode())


def test_a_template_that_rewrites_earlier_turns_is_refused() -> None:
    with pytest.raises(LabmgrError, match="does not render the content of message 1 as written"):
        render_example(CHAT[1:3], _ReorderingTokenizer())
