"""Rating scores and next-token distributions from the first generated token's top logprobs
(`[(token, logprob), …]`)."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

TopLogprobs = Sequence[tuple[str, float]]


def token_probabilities(top: TopLogprobs) -> dict[str, float]:
    """`{token: probability}`; a token listed twice has its probabilities summed."""
    probs: dict[str, float] = {}
    for token, logprob in top:
        probs[token] = probs.get(token, 0.0) + math.exp(logprob)
    return probs


@dataclass(frozen=True)
class RatingScore:
    """A rating read from logprobs: the expected value, or None with the reason."""

    score: float | None
    probs: dict[int, float] | None
    """Normalised probability of each integer in range (None when refused)."""
    refusal: str | None = None


@functools.lru_cache(maxsize=4096)  # a judge's verdicts repeat the same few tokens
def _as_int(token: str) -> int | None:
    try:
        return int(token)
    except ValueError:
        return None


@functools.lru_cache(maxsize=64)
def _integers(min_rating: int, max_rating: int) -> dict[str, int]:
    """`{"7": 7, …}` for the integers in range: the tokens almost every verdict consists of."""
    return {str(value): value for value in range(min_rating, max_rating + 1)}


def rating_score(
    raw: dict[str, float], *, min_rating: int, max_rating: int, refusal_threshold: float
) -> RatingScore:
    """The expected integer over tokens in `[min_rating, max_rating]` (tokens of the same
    integer summed); a refusal (None) when they hold less than `1 - refusal_threshold`."""
    integers = _integers(min_rating, max_rating)
    by_value: dict[int, float] = {}
    for token, prob in raw.items():
        value = integers.get(token)
        if value is None:  # " 7", "07" and the like, or no number at all
            value = _as_int(token)
            if value is None or not min_rating <= value <= max_rating:
                continue
        by_value[value] = by_value.get(value, 0.0) + prob
    total = sum(by_value.values())
    if total <= 0:
        return RatingScore(None, None, "no numeric token in range")
    if 1.0 - total >= refusal_threshold:
        return RatingScore(None, None, f"only {total:.0%} of the probability on valid numbers")
    probs = {value: prob / total for value, prob in sorted(by_value.items())}
    return RatingScore(sum(value * prob for value, prob in probs.items()), probs)


def average_probabilities(
    samples: Iterable[dict[str, float]], *, as_logprobs: bool = False
) -> dict[str, float]:
    """Token distributions averaged over samples (a missing token counts as 0), highest
    first; with `as_logprobs`, as log-probabilities."""
    totals: dict[str, float] = {}
    count = 0
    for probs in samples:
        count += 1
        for token, prob in probs.items():
            totals[token] = totals.get(token, 0.0) + prob
    if count == 0:
        return {}
    averaged = sorted(((t, p / count) for t, p in totals.items()), key=lambda kv: -kv[1])
    if as_logprobs:
        return {token: math.log(prob) if prob > 0 else -math.inf for token, prob in averaged}
    return dict(averaged)


def _parsed(texts: Sequence[str | None]) -> list[Any]:
    """Each text's JSON `[[token, logprob], …]` (None for no text, an exception for a text
    that does not parse), all in one `json.loads` when every text is well formed."""
    present = [text for text in texts if text]
    try:
        documents = iter(json.loads("[" + ",".join(present) + "]"))
    except ValueError:
        documents = iter([_loaded(text) for text in present])
    return [next(documents) if text else None for text in texts]


def _loaded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        return error


Scored = tuple[float, dict[str, float], dict[int, float] | None] | Exception
"""A verdict's score (NaN when refused), token and rating probabilities, or why unreadable."""

SCORED_MAX = 16_384
"""Verdicts remembered per rating scale: a re-run in the same process reads the same texts."""
_SCORED: dict[tuple[int, int, float], dict[str | None, Scored]] = {}


def rating_scores(
    logprobs_json: Sequence[str | None],
    *,
    min_rating: int,
    max_rating: int,
    refusal_threshold: float,
) -> list[Scored]:
    """`rating_score(token_probabilities(top))` of many first-token logprob lists (their
    JSON text, None for none), the JSON of those not scored before parsed in one call.
    Identical texts share one result (its dicts too: treat them as read-only)."""
    scored = _SCORED.setdefault((min_rating, max_rating, refusal_threshold), {})
    distinct = dict.fromkeys(logprobs_json)
    new = [text for text in distinct if text not in scored]
    if len(scored) + len(new) > SCORED_MAX:
        scored.clear()
        new = list(distinct)
    exp = math.exp
    for text, top in zip(new, _parsed(new), strict=True):
        if isinstance(top, Exception):
            scored[text] = top
            continue
        raw: dict[str, float] = {}
        try:
            for token, logprob in top or ():
                token = str(token)
                raw[token] = raw.get(token, 0.0) + exp(float(logprob))
        except (TypeError, ValueError) as error:
            scored[text] = error
            continue
        score = rating_score(
            raw, min_rating=min_rating, max_rating=max_rating, refusal_threshold=refusal_threshold
        )
        scored[text] = (math.nan if score.score is None else score.score, raw, score.probs)
    return [scored[text] for text in logprobs_json]
