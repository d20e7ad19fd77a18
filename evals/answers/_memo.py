"""A question's finished frame, kept in the cache so that asking the same question of the same
models again reads one row instead of building the frame (its answers, then every judge's
verdicts laid out in columns) from the samples again.

A frame is kept only when it is complete: every sample and every verdict found, no row with
an error, nothing stopped or left in a batch. Its samples are then fixed (a stored sample is
never replaced, and a clear drops every kept frame with them), so the frame is a function of
what it is keyed by (`FrameMemo.digest`): the question as it is defined and the groups, the
answer requests as planned (each one's cache key, which names its endpoint, model, messages
and parameters), each judge as it is defined with the parameters and endpoint its model is
sent, the prices, and the source of the code that builds frames and of the versions of Python,
pandas and pyarrow that pickle it. Asked with a price function without an identity (`price=`
a plain function), nothing is kept.

Frames are pickles, which run code when read: a cache keeps and reads them only where nobody
but its user can write (`Cache.read_frame`). See docs/design/cache.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.runner import endpoints_for

if TYPE_CHECKING:
    import pandas as pd

    from evals.answers._protocols import Askable, Judge
    from evals.runner import Planned, RunContext, RunOutcome

__all__ = ["FrameMemo", "frame_memo"]

FRAME_MEMO_FORMAT = 1
"""Part of every digest: bumped if what is kept changes shape."""


@functools.cache
def _code_identity() -> str:
    """The source of every module that builds a frame (the whole `evals` package), and the
    versions that pickle it: a frame kept by other code is never read."""
    import pandas
    import pyarrow

    package = Path(__file__).resolve().parents[1]  # evals/
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.read_bytes())
    versions = (sys.version, pandas.__version__, pyarrow.__version__, FRAME_MEMO_FORMAT)
    digest.update(repr(versions).encode())
    return digest.hexdigest()


def _definition(item: Any) -> Any:
    """How a question or judge is defined, as JSON (None if it cannot say: not kept)."""
    dump = getattr(item, "model_dump", None)
    if dump is None:
        return None
    return [type(item).__module__, type(item).__qualname__, dump(mode="json")]


@dataclass(frozen=True)
class FrameMemo:
    """Where a question's finished frame is kept (`digest`) in `ctx.cache`."""

    digest: str
    generation: str | None
    """The cache's clear counter before any sample was read (see `Cache.generation`)."""

    def read(self, ctx: RunContext) -> pd.DataFrame | None:
        """The kept frame, or None (not kept, or unreadable: then it is built again)."""
        import pandas as pd

        blob = ctx.cache.read_frame(self.digest, self.generation)
        if blob is None:
            return None
        try:
            frame = pickle.loads(blob)  # kept by this user: see `Cache.read_frame`
        except Exception:  # a frame is a copy: whatever stops it, the frame is built again
            return None
        return frame if isinstance(frame, pd.DataFrame) else None

    def keep(self, ctx: RunContext, frame: pd.DataFrame, outcome: RunOutcome) -> None:
        """Keep `frame` if it is complete (see the module's note)."""
        if not _complete(frame, outcome):
            return
        blob = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
        ctx.cache.store_frame(self.generation, self.digest, blob)


def _complete(frame: pd.DataFrame, outcome: RunOutcome) -> bool:
    if outcome.errors or outcome.failed_models or outcome.unrouted_models:
        return False
    if outcome.stopped or outcome.pending:
        return False
    return not any(isinstance(error, str) and error for error in frame["error"].tolist())


def frame_memo(
    question: Askable,
    groups: Mapping[str, Sequence[str]],
    planned: Sequence[Planned],
    judges: Mapping[str, Judge],
    sent: Mapping[str, Mapping[str, Any]],
    ctx: RunContext,
    generation: str | None,
) -> FrameMemo | None:
    """Where `question`'s frame over `groups` is kept, given its `planned` answer requests and
    its `judges` (`sent`: the parameters each judge's model is sent); None when it cannot be
    kept (a model without an endpoint, a price function without an identity, a question or
    judge that cannot say how it is defined)."""
    prices = getattr(ctx.price, "identity", None)
    if not isinstance(prices, str):
        return None
    requests = []
    for p in planned:
        if p.request is None:
            return None
        requests.append((p.request.cache_key, p.samples))
    routes = endpoints_for(list(dict.fromkeys(j.model for j in judges.values())), ctx.router)
    judged = {}
    for name, judge in judges.items():
        route = routes[judge.model]
        definition = _definition(judge)
        if isinstance(route, str) or definition is None:
            return None
        judged[name] = [definition, sent[name], route.identity]
    definition = _definition(question)
    if definition is None:
        return None
    text = json.dumps(
        [
            _code_identity(),
            prices,
            definition,
            {group: list(models) for group, models in groups.items()},
            requests,
            judged,
        ],
        default=str,
    )
    return FrameMemo(hashlib.sha256(text.encode()).hexdigest(), generation)
