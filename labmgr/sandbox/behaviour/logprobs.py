"""Token logprob entries shaped like the API's ``ChatCompletionTokenLogprob``."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from .text import token_bytes

TokenChoice = tuple[str, float, tuple[int, ...]]
"""A listed alternative: token, logprob, UTF-8 bytes."""

_FILLERS = (
    *" the| a| and| to|,|.| of| it| is| that| you| I| in| for| with| this| be| can| on".split("|"),  # noqa: SIM905
    *" more| your|\n| as| some| not".split("|"),  # noqa: SIM905
)
_HALF = math.log(0.5)


def token_choices(distribution: Sequence[tuple[str, float]]) -> tuple[TokenChoice, ...]:
    return tuple((token, math.log(p), token_bytes(token)) for token, p in distribution)


def _alternative(token: str, logprob: float, raw: tuple[int, ...]) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(raw)}


def single_token_entry(
    choices: Sequence[TokenChoice], index: int, top_logprobs: int
) -> dict[str, Any]:
    """The entry for one sampled token (`choices[index]`) with its listed alternatives."""
    top = [_alternative(*choice) for choice in choices[:top_logprobs]]
    return _alternative(*choices[index]) | {"top_logprobs": top}


def _level_table() -> tuple[tuple[float, tuple[tuple[dict[str, Any], ...], ...]], ...]:
    """Per probability level of the chosen token: its logprob, and per starting filler the
    filler alternatives with logprobs that halve the remaining mass again and again."""
    table = []
    n_fillers = len(_FILLERS)
    for level in range(_LEVELS):
        p = 0.45 + 0.54 * level / (_LEVELS - 1)
        rest = math.log1p(-p)
        rotations = []
        for start in range(n_fillers):
            alternatives = []
            logprob = rest
            for k in range(n_fillers):
                filler = _FILLERS[(start + k) % n_fillers]
                logprob += _HALF
                alternatives.append(_alternative(filler, logprob, token_bytes(filler)))
            rotations.append(tuple(alternatives))
        table.append((math.log(p), tuple(rotations)))
    return tuple(table)


_LEVELS = 32
_TABLE = _level_table()


def text_entries(
    rng: random.Random, tokens: Sequence[str], top_logprobs: int
) -> list[dict[str, Any]]:
    """Entries for generated text: each token the most likely (p 0.45–0.99), shared filler
    alternatives halving the rest below it (treat them as read-only)."""
    entries = []
    n_fillers = len(_FILLERS)
    wanted = top_logprobs - 1
    random_ = rng.random
    for token in tokens:
        logprob, rotations = _TABLE[int(_LEVELS * random_() ** 0.35)]
        raw = list(token_bytes(token))
        top: list[dict[str, Any]] = []
        if top_logprobs:
            top.append({"token": token, "logprob": logprob, "bytes": raw})
            if wanted > 0:
                fillers = rotations[int(n_fillers * random_())][: wanted + 1]
                top.extend([f for f in fillers if f["token"] != token][:wanted])
        entries.append({"token": token, "logprob": logprob, "bytes": raw, "top_logprobs": top})
    return entries
