"""What checking judges would buy now, without sending anything: the verdict requests the
cache lacks, their tokens (prompts counted at about four characters a token, completions at
their limit) and cost."""

from __future__ import annotations

from collections.abc import Sequence

from evals.answers import Estimate, count_tokens
from evals.cache import CachedLookup
from evals.judge_accuracy._asking import plan_verdicts
from evals.judge_accuracy._items import JudgeItems
from evals.runner import RunContext, missing_calls


def estimate_verdicts(items: JudgeItems, judges: Sequence[str], ctx: RunContext) -> Estimate:
    """The verdicts of `judges` on `items` still to buy, and their cost (an upper bound)."""
    from labmgr.pricing import BATCH_DISCOUNT

    planned = plan_verdicts(items, judges, ctx).planned
    keys = [p.request.cache_key for p in planned if p.request is not None]
    cached = CachedLookup(ctx.cache.lookup(keys))
    calls = missing_calls(planned, cached, ctx.settings, [items.label] * len(planned))
    prompt_tokens = completion_tokens = 0
    cost = 0.0
    unpriced: dict[str, None] = {}
    for call in calls:
        prompt = sum(count_tokens(m.get("content")) for m in call.request.messages)
        params = call.request.params
        completion = int(params.get("max_tokens") or params.get("max_completion_tokens") or 1)
        prompt_tokens += prompt
        completion_tokens += completion
        price = ctx.price(call.request.model, prompt, completion)
        if price is None:
            unpriced[call.request.model] = None
        else:
            cost += price
    return Estimate(
        requests=len(calls),
        samples=len(calls),
        cached_samples=max(0, len(set(keys)) - len(calls)),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost=cost,
        unpriced_models=tuple(unpriced),
        batch_cost=cost * BATCH_DISCOUNT,
    )
