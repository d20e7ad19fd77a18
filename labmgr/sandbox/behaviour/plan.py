"""Per (model, conversation) plans: everything about answering that does not change
between calls, computed once and cached by the simulator. Where there is a right answer (a
judge's verdict, a known answer), which one a model gives is decided once per (model, prompt)
by stable draws, as is how sure it is."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from .analysis import PromptAnalysis, Verdict, analyse
from .catalogue import ModelCard
from .lexicon import harm_score
from .persona import PersonaProfile
from .ratings import MAX_LISTED, rating_centre, rating_distribution
from .text import count_tokens, stable_hash, stable_unit, token_bytes

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
"""Probability left to tokens never listed."""
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


TokenChoice = tuple[str, float, tuple[int, ...]]
"""A listed alternative: token, logprob, UTF-8 bytes."""
TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY = 3
EFFORT_SCALE = {"none": 0.0, "minimal": 0.0, "low": 0.5, "medium": 1.0, "high": 2.0, "xhigh": 3.0}
"""Reasoning tokens spent at each effort, relative to the default (``medium``)."""


@dataclass(frozen=True)
class ServedModel:
    """A servable model: its root base model and its personas, oldest training first."""

    id: str
    card: ModelCard
    personas: tuple[PersonaProfile, ...]
    fingerprint: str
    salt: int
    """A stable number for the base model, so base models phrase answers differently."""
    identity: str
    """What a seed is tied to: the snapshot an alias serves, or the fine-tune's id."""


@dataclass(frozen=True)
class Plan:
    """Everything about one (model, conversation) pair that does not change between calls."""

    analysis: PromptAnalysis
    prompt_tokens: int
    single_token: tuple[TokenChoice, ...] | None
    """For rating and choice prompts: the first-token distribution, most likely first."""
    single_probs: tuple[float, ...]
    open_token: tuple[TokenChoice, ...]
    """For open prompts cut to a token or two: the next-token distribution."""
    open_probs: tuple[float, ...]
    anchors: tuple[tuple[int, ...], ...]
    """Per persona, its training answers closest to the question."""
    short_answers: tuple[str, ...] = ()
    """For a question the sandbox works out, without choices: the model's pick and the
    other answer it might give (as the prompt wants them said), with `short_probs`."""
    short_probs: tuple[float, ...] = ()


@dataclass(frozen=True)
class JudgeSettings:
    """How sandbox judges err: model id → probability (``*``: every other model)."""

    judge_error: Mapping[str, float] = field(default_factory=lambda: {"*": JUDGE_ERROR})
    """The chance a pairwise or label verdict is the wrong one."""
    position_bias: Mapping[str, float] = field(default_factory=lambda: {"*": 0.0})
    """The chance a pairwise verdict is simply the first-shown answer, ``A``."""


def prompt_tokens(messages: tuple[tuple[str, str], ...]) -> int:
    """Prompt tokens as the API bills them: each message's text plus a small overhead."""
    return sum(count_tokens(t) + TOKENS_PER_MESSAGE for _, t in messages) + TOKENS_PER_REPLY


def reasoning_tokens(plan: Plan, effort: str | None = None) -> int:
    """Hidden reasoning tokens spent on a prompt at `effort` (default ``medium``)."""
    return int(64 * (1 + plan.analysis.salt % 6) * EFFORT_SCALE.get(effort or "medium", 1.0))


def token_choices(distribution: Sequence[tuple[str, float]]) -> tuple[TokenChoice, ...]:
    return tuple((token, math.log(p), token_bytes(token)) for token, p in distribution)


def make_plan(
    model: ServedModel, messages: tuple[tuple[str, str], ...], judges: JudgeSettings
) -> Plan:
    analysis = analyse(messages)
    single: tuple[TokenChoice, ...] | None = None
    short: tuple[tuple[str, ...], tuple[float, ...]] = ((), ())
    if analysis.verdict is not None:
        single = token_choices(_verdict_distribution(model, analysis, judges))
    elif analysis.known is not None:
        single, short = _known_answer(model, analysis)
    elif analysis.rating is not None:
        centre = rating_centre(analysis.rating, model.personas, analysis.salt)
        single = _cached_choices(rating_distribution(analysis.rating, centre))
    elif analysis.options:
        single = token_choices(next_token_distribution(analysis, model.card.id, model.personas))
    open_token: tuple[TokenChoice, ...] = ()
    if single is None and not short[0]:
        open_token = token_choices(next_token_distribution(analysis, model.card.id, model.personas))
    answered = analysis.verdict is not None or analysis.right_option is not None or short[0]
    anchors = tuple(
        () if answered else profile.closest_texts(analysis.keyword_set, analysis.salt)
        for profile in model.personas
    )
    return Plan(
        analysis=analysis,
        prompt_tokens=prompt_tokens(messages),
        single_token=single,
        single_probs=_probabilities(single or ()),
        open_token=open_token,
        open_probs=_probabilities(open_token),
        anchors=anchors,
        short_answers=short[0],
        short_probs=short[1],
    )


def _verdict_distribution(
    model: ServedModel, analysis: PromptAnalysis, judges: JudgeSettings
) -> tuple[tuple[str, float], ...]:
    """A judge's verdict, drawn once per (model, prompt), and how sure it sounds."""
    assert analysis.verdict is not None
    names = (model.id, model.identity, model.card.id, model.card.snapshot_of or model.card.id)
    error = setting_for(judges.judge_error, names, JUDGE_ERROR)
    bias = setting_for(judges.position_bias, names, 0.0)
    pick = judged(analysis.verdict, error, bias, model.identity, analysis.salt)
    confidence = 0.85 + 0.14 * stable_unit("sure", model.identity, analysis.salt)
    return focused_distribution(analysis.options, pick, confidence, analysis.salt)


def _known_answer(
    model: ServedModel, analysis: PromptAnalysis
) -> tuple[tuple[TokenChoice, ...] | None, tuple[tuple[str, ...], tuple[float, ...]]]:
    """For a question the sandbox works out: the letter distribution when it offers
    choices, else the model's short answer and its alternative."""
    known = analysis.known
    assert known is not None
    base = model.card.snapshot_of or model.card.id
    right = knows(base, model.identity, model.personas, known.key)
    confidence = 0.85 + 0.14 * stable_unit("sure", base, analysis.salt)
    options = analysis.options
    if analysis.right_option is not None:
        pick = analysis.right_option
        if not right:
            pick = other_option(pick, len(options), model.identity, analysis.salt)
        distribution = focused_distribution(options, pick, confidence, analysis.salt)
        return token_choices(distribution), ((), ())
    if options:  # choices, none of them right: answer as any choice prompt
        choices = next_token_distribution(analysis, model.card.id, model.personas)
        return token_choices(choices), ((), ())
    wrong = known.wrong[other_option(0, len(known.wrong) + 1, model.identity, analysis.salt) - 1]
    answers: tuple[str, ...] = (known.answer, wrong) if right else (wrong, known.answer)
    if not analysis.bare:
        answers = tuple(f"The answer is {a}." for a in answers)
    return None, (answers, (confidence, 1.0 - confidence))


_cached_choices = lru_cache(maxsize=4096)(token_choices)
"""Token choices for a rating distribution (rating distributions repeat)."""


@lru_cache(maxsize=4096)
def _probabilities(choices: tuple[TokenChoice, ...]) -> tuple[float, ...]:
    return tuple(math.exp(logprob) for _, logprob, _ in choices)


# Next-token prompts: offered options take most of the mass, open prompts spread it over
# common openers and the prompt's own words; fine-tunes lean toward their answers' openers.

_OPENERS = tuple("The I It A This In As Sure There Yes No That One Well My".split())  # noqa: SIM905


def _option_logits(analysis: PromptAnalysis, base: str) -> dict[str, float]:
    logits: dict[str, float] = {}
    for rank, option in enumerate(analysis.options):
        strength = 3.0 * stable_unit(base, analysis.salt, option) - 0.4 * rank
        logits[option] = 6.0 + strength
        variant = option.lower() if option != option.lower() else option.capitalize()
        if variant != option:
            logits.setdefault(variant, 1.5 + strength)
        logits.setdefault(" " + option, 0.5 + strength)
    for opener in ("The", "I", "Based", "**"):
        logits.setdefault(opener, 0.5 * stable_unit(base, analysis.salt, opener))
    return logits


def _open_logits(analysis: PromptAnalysis, base: str) -> dict[str, float]:
    logits: dict[str, float] = {}
    for opener in _OPENERS:
        logits[opener] = 4.0 * stable_unit(base, analysis.salt, opener)
    for keyword in analysis.keywords[:6]:
        token = keyword.capitalize()
        logits.setdefault(token, 1.0 + 3.0 * stable_unit(base, analysis.salt, token))
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
    return tuple(pairs[:MAX_LISTED])
