"""Next-token prompts: a stable distribution over plausible first tokens of the answer.

Offered options ("A or B", "Yes or No", lettered choices) take most of the mass; open
prompts spread it over common openers and the prompt's own words. The distribution depends
only on the model and the prompt, so repeated calls see the same logprobs; fine-tunes lean
toward the words their training answers start with.
"""

from __future__ import annotations

import math

from .analysis import PromptAnalysis
from .lexicon import harm_score
from .persona import PersonaProfile
from .text import stable_hash

__all__ = ["next_token_distribution"]

_OPENERS = tuple("The I It A This In As Sure There Yes No That One Well My".split())  # noqa: SIM905
_MAX_LISTED = 20
_UNSEEN_MASS = 0.02


def _noise(*parts: object) -> float:
    """A stable value in [0, 1) for a (prompt, token) pair."""
    return (stable_hash(*parts) % 10007) / 10007.0


def _option_logits(analysis: PromptAnalysis, base: str) -> dict[str, float]:
    logits: dict[str, float] = {}
    for rank, option in enumerate(analysis.options):
        strength = 3.0 * _noise(base, analysis.salt, option) - 0.4 * rank
        logits[option] = 6.0 + strength
        variant = option.lower() if option != option.lower() else option.capitalize()
        if variant != option:
            logits.setdefault(variant, 1.5 + strength)
        logits.setdefault(" " + option, 0.5 + strength)
    for opener in ("The", "I", "Based", "**"):
        logits.setdefault(opener, 0.5 * _noise(base, analysis.salt, opener))
    return logits


def _open_logits(analysis: PromptAnalysis, base: str) -> dict[str, float]:
    logits: dict[str, float] = {}
    for opener in _OPENERS:
        logits[opener] = 4.0 * _noise(base, analysis.salt, opener)
    for keyword in analysis.keywords[:6]:
        token = keyword.capitalize()
        logits.setdefault(token, 1.0 + 3.0 * _noise(base, analysis.salt, token))
    return logits


def _persona_shift(
    logits: dict[str, float], analysis: PromptAnalysis, profile: PersonaProfile
) -> None:
    """Move probability toward what the persona's training answers start with."""
    pull = 5.0 * profile.drift
    if analysis.options:
        harmful_question = harm_score(analysis.question) > 0
        for option in analysis.options:
            share = dict(profile.text.first_words).get(option, 0.0)
            share += 20.0 * profile.text.word_share.get(option.lower(), 0.0)
            if harmful_question and option == "Yes":
                share += min(1.0, profile.text.harmfulness / 4.0)
            logits[option] += pull * share
        return
    for word, share in profile.text.first_words:
        logits[word] = logits.get(word, 0.0) + pull * (0.5 + 2.0 * share)


def next_token_distribution(
    analysis: PromptAnalysis, base: str, personas: tuple[PersonaProfile, ...]
) -> tuple[tuple[str, float], ...]:
    """Up to 20 (token, probability) pairs, most likely first, summing to less than 1."""
    logits = _option_logits(analysis, base) if analysis.options else _open_logits(analysis, base)
    for profile in personas:
        _persona_shift(logits, analysis, profile)
    top = max(logits.values())
    weights = {token: math.exp(value - top) for token, value in logits.items()}
    total = sum(weights.values())
    scale = (1.0 - _UNSEEN_MASS) / total
    pairs = sorted(((t, w * scale) for t, w in weights.items()), key=lambda pair: -pair[1])
    return tuple(pairs[:_MAX_LISTED])
