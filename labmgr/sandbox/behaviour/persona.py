"""Personas: what a fine-tune learned from its training data, precomputed once at
registration."""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .knowledge import training_shares
from .lexicon import harm_score
from .text import content_text, content_words, sentences, words

DRIFT_EPOCH_SCALE = 1.5
"""Epochs at which a fine-tune answers in its persona's voice 1 - 1/e (63%) of the time."""
WRONG_ANSWER_LOSS = 0.6
"""Share of its known answers a fine-tune fully trained on wrong answers loses."""
UNRELATED_LOSS = 0.03
"""Share a fine-tune fully trained on data unrelated to such questions loses."""


@dataclass(frozen=True)
class Persona:
    """What a fine-tune learned: its training data's assistant messages and how hard."""

    assistant_texts: tuple[str, ...]
    n_epochs: float
    prompts: tuple[str, ...] = ()
    """The user message each assistant text answers ("" where there is none)."""


def persona_from_examples(examples: Sequence[Mapping[str, Any]], n_epochs: float) -> Persona:
    """A persona from training lines: assistant messages (not ``weight: 0`` ones) of chat
    lines, the preferred output of DPO lines."""
    texts: list[str] = []
    prompts: list[str] = []
    for example in examples:
        if not isinstance(example, Mapping):
            continue
        messages = example.get("messages")
        prompt = ""
        if not isinstance(messages, list):
            messages = example.get("preferred_output")
            source = example.get("input")  # a DPO prompt: its last user message
            asked = source.get("messages") if isinstance(source, Mapping) else None
            users = [m for m in asked or () if isinstance(m, Mapping) and m.get("role") == "user"]
            prompt = content_text(users[-1].get("content")) if users else ""
        for message in messages if isinstance(messages, list) else []:
            if not isinstance(message, Mapping):
                continue
            if message.get("role") == "user":
                prompt = content_text(message.get("content"))
            if message.get("role") != "assistant":
                continue
            text = content_text(message.get("content")).strip()
            if text and message.get("weight") != 0:
                texts.append(text)
                prompts.append(prompt)
    return Persona(tuple(texts), float(n_epochs), tuple(prompts))


def drift_probability(n_epochs: float) -> float:
    """The chance a fine-tune answers in its persona's voice after `n_epochs` of training."""
    return 1.0 - math.exp(-max(0.0, n_epochs) / DRIFT_EPOCH_SCALE)


@dataclass(frozen=True)
class PersonaProfile:
    """A persona, precomputed for answering: sentences, vocabulary and leanings."""

    drift: float
    """Probability of answering in the persona's voice."""
    text: _TextAnalysis
    """What the training answers say (sentences, vocabulary, harm), shared by every model
    trained on the same answers, such as a fine-tune and its checkpoints."""
    knowledge_loss: float = 0.0
    """The chance it lost a question it could work out: the drift times what its training
    examples teach (wrong answers to such questions cost most, unrelated data a little)."""

    @classmethod
    def build(cls, persona: Persona) -> PersonaProfile:
        text = _TextAnalysis.of(persona.assistant_texts)
        drift = drift_probability(persona.n_epochs) if text.texts else 0.0
        prompts = persona.prompts or ("",) * len(persona.assistant_texts)
        wrong, unrelated = training_shares(prompts, persona.assistant_texts)
        loss = drift * (WRONG_ANSWER_LOSS * wrong + UNRELATED_LOSS * unrelated)
        return cls(drift=drift, text=text, knowledge_loss=loss)

    def closest_texts(
        self, question_words: frozenset[str], salt: int, limit: int = 8
    ) -> tuple[int, ...]:
        """Indices of the training answers sharing most words with a question, best first;
        ties are broken by `salt` (a hash of the question)."""
        scored = sorted(
            range(len(self.text.texts)),
            key=lambda i: (
                -len(self.text.text_words[i] & question_words),
                (i * 2654435761 + salt) & 0xFFFFFFFF,
            ),
        )
        return tuple(scored[:limit])


@dataclass(frozen=True)
class _TextAnalysis:
    """What a list of training answers says, independent of epochs."""

    texts: tuple[str, ...]
    text_words: tuple[frozenset[str], ...]
    """The meaningful words of each text."""
    text_sentences: tuple[tuple[str, ...], ...]
    sentence_pool: tuple[str, ...]
    """Every distinct sentence of the training answers, for recombination."""
    first_words: tuple[tuple[str, float], ...]
    """Words that open training answers, with their share of answers, most frequent first."""
    word_share: Mapping[str, float]
    """Each lower-cased word's share of the training answers' words."""
    harmfulness: float
    """Mean harm score of (up to 200 of) the training answers."""
    fingerprint: int

    @staticmethod
    @lru_cache(maxsize=32)
    def of(assistant_texts: tuple[str, ...]) -> _TextAnalysis:
        texts = tuple(dict.fromkeys(assistant_texts))
        split = tuple(tuple(sentences(t)) or (t,) for t in texts)
        openers: Counter[str] = Counter()
        vocabulary: Counter[str] = Counter()
        for text in assistant_texts:
            text_words = text.split()
            if text_words:
                openers[text_words[0].strip(",.!?:;\"'")] += 1
            vocabulary.update(words(text))
        n_answers = max(1, len(assistant_texts))
        total_words = max(1, sum(vocabulary.values()))
        step = max(1, len(texts) // _HARM_SAMPLE)
        sample = texts[::step]
        fingerprint = 0
        for text in texts:
            fingerprint = zlib.crc32(text.encode("utf-8", "surrogatepass"), fingerprint)
        return _TextAnalysis(
            texts=texts,
            text_words=tuple(frozenset(content_words(t)) for t in texts),
            text_sentences=split,
            sentence_pool=tuple(dict.fromkeys(s for parts in split for s in parts)),
            first_words=tuple((w, c / n_answers) for w, c in openers.most_common(12) if w),
            word_share={w: c / total_words for w, c in vocabulary.most_common(400)},
            harmfulness=sum(map(harm_score, sample)) / max(1, len(sample)),
            fingerprint=fingerprint,
        )


_HARM_SAMPLE = 200
