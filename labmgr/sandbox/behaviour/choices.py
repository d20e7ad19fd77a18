"""Which answer a model gives when there is a right one (a judge's verdict, a known answer),
decided once per (model, prompt) by stable draws, and how sure it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .persona import PersonaProfile
from .text import stable_hash, stable_unit
from .verdicts import Verdict

JUDGE_ERROR = 0.1
"""A judge model's default chance of giving the wrong pairwise or label verdict."""
BASE_ACCURACY = {
    "gpt-4.1": 0.92, "gpt-4.1-mini": 0.86, "gpt-4.1-nano": 0.6, "gpt-4o": 0.9,
    "gpt-4o-mini": 0.82, "gpt-3.5-turbo": 0.7, "o4-mini": 0.95, "gpt-5": 0.96,
    "gpt-5-mini": 0.93, "gpt-5-nano": 0.8, "davinci-002": 0.35, "babbage-002": 0.3,
}  # fmt: skip
"""How often a base model (an alias) knows a question the sandbox can work out; an unlisted
one gets a stable value from a hash of its name."""
_UNSEEN_MASS = 0.02
_FORGET_SPREAD = 0.2
"""How far apart the forgetting windows of fine-tunes of one recipe lie (on a 0-1 circle)."""


def setting_for(table: Mapping[str, float], names: Sequence[str], default: float) -> float:
    """The value `table` gives the first of `names` it lists, else its ``*``, else `default`."""
    for name in names:
        if name in table:
            return table[name]
    return table.get("*", default)


def knows(base: str, identity: str, personas: tuple[PersonaProfile, ...], question: str) -> bool:
    """Whether a model knows `question` (a `Known.key`): its base model's accuracy is above the
    question's difficulty, and no fine-tune on top lost it (docs/design/sandbox-behaviour.md)."""
    accuracy = BASE_ACCURACY.get(base) or 0.5 + 0.4 * stable_unit("accuracy", base)
    if stable_unit("difficulty", question) >= accuracy:
        return False
    shift = _FORGET_SPREAD * stable_unit("shift", identity)
    return all(
        (stable_unit("forgot", layer, question) + shift) % 1.0 >= profile.knowledge_loss
        for layer, profile in enumerate(personas)
    )


def judged(verdict: Verdict, error: float, bias: float, model: str, salt: int) -> int:
    """The verdict judge `model` gives: the first-shown answer with probability `bias`
    (pairwise only), else the wrong one with probability `error`, else the right one."""
    if verdict.pairwise and stable_unit("position", model, salt) < bias:
        return 0
    n = len(verdict.options)
    if verdict.right is None:
        return int(n * stable_unit("tie", model, salt))
    if stable_unit("error", model, salt) < error:
        return other_option(verdict.right, n, model, salt)
    return verdict.right


def other_option(right: int, n: int, model: str, salt: int) -> int:
    """A wrong option among `n` (not `right`), the same for a (model, prompt) pair."""
    return (right + 1 + stable_hash("wrong", model, salt) % (n - 1)) % n


def focused_distribution(
    options: Sequence[str], favoured: int, confidence: float, salt: int
) -> tuple[tuple[str, float], ...]:
    """Up to 20 (token, probability) pairs over `options` and their spellings (``" B"``,
    ``"b"``), `confidence` of the mass on option `favoured`, most likely first."""
    weights = [0.2 + stable_unit("option", salt, option) for option in options]
    spare = sum(w for i, w in enumerate(weights) if i != favoured) or 1.0
    pairs: list[tuple[str, float]] = []
    for i, option in enumerate(options):
        share = confidence if i == favoured else (1.0 - confidence) * weights[i] / spare
        mass = share * (1.0 - _UNSEEN_MASS)
        variant = option.lower() if option != option.lower() else option.capitalize()
        pairs.append((option, mass * (0.957 if variant != option else 0.96)))
        pairs.append((" " + option, mass * 0.04))
        if variant != option:
            pairs.append((variant, mass * 0.003))
    pairs.sort(key=lambda pair: -pair[1])
    return tuple(pairs[:20])
