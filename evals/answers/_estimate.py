"""`q.estimate(groups)`: what `q.df(groups)` would buy now, without sending anything.

Prompt tokens are counted roughly (four characters per token); completion tokens are the
upper bound `max_tokens` per sample. Judge requests are bounded by one per new sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals.answers._preparing import judge_params
from evals.cache import CachedLookup
from evals.runner import RunContext, missing_calls, plan_question

if TYPE_CHECKING:
    from evals.runner import Askable


def count_tokens(text: object) -> int:
    """A rough token count (about four characters per token) for estimates."""
    if isinstance(text, str):
        return max(1, (len(text) + 3) // 4) if text else 0
    if isinstance(text, list):
        return sum(count_tokens(part.get("text", "")) for part in text if isinstance(part, dict))
    return 0


@dataclass(frozen=True)
class Estimate:
    """Requests and tokens still to buy, and their cost (models without a price are listed
    in `unpriced_models` and not counted)."""

    requests: int
    samples: int
    cached_samples: int
    prompt_tokens: int
    completion_tokens: int
    """An upper bound: `max_tokens` for every new sample."""
    cost: float
    judge_requests: int = 0
    unpriced_models: tuple[str, ...] = ()
    batch_cost: float = 0.0
    """The same through the Batch API (`labmgr.pricing.BATCH_DISCOUNT` of `cost`)."""

    def __str__(self) -> str:
        cost = f"${self.cost:.4f}" + (
            f" (no price for {', '.join(self.unpriced_models)})" if self.unpriced_models else ""
        )
        return (
            f"{self.requests} requests for {self.samples} new samples "
            f"({self.cached_samples} cached), ~{self.prompt_tokens} prompt tokens, "
            f"<= {self.completion_tokens} completion tokens, up to {cost}"
            + (f", plus up to {self.judge_requests} judge requests" if self.judge_requests else "")
        )


def estimate_question(
    question: Askable, groups: Mapping[str, Sequence[str]], ctx: RunContext
) -> Estimate:
    """What asking `question` of `groups` would buy now (nothing is sent); a question some
    model (or judge) would refuse raises `UnsupportedRequestError`, as asking it would."""
    judge_params(question.judge_questions(), question.name, ctx)
    planned = plan_question(question, groups, ctx.router, ctx.requests)
    cached = CachedLookup(
        ctx.cache.lookup(p.request.cache_key for p in planned if p.request is not None)
    )
    calls = missing_calls(planned, cached, ctx.settings, [question.name] * len(planned))
    per_sample_completion = question.expected_completion_tokens()
    prompt_tokens = completion_tokens = new_samples = 0
    bills: list[tuple[str, int, int]] = []  # (model, prompt tokens, completion tokens)
    for call in calls:
        prompt = sum(count_tokens(m.get("content")) for m in call.request.messages)
        completion = per_sample_completion * len(call.sample_ixs)
        prompt_tokens += prompt
        completion_tokens += completion
        new_samples += len(call.sample_ixs)
        bills.append((call.request.model, prompt, completion))
    total = sum(p.samples for p in planned if p.request is not None)
    judges = question.judge_questions()
    rows = new_samples // max(1, question.cached_samples_per_row)  # each judged once
    for judge in judges.values():
        prompt = count_tokens(judge.prompt_template) + per_sample_completion
        bills.append((judge.model, prompt * rows, judge.expected_completion_tokens() * rows))
    cost = 0.0
    unpriced: dict[str, None] = {}
    for model, prompt, completion in bills:
        price = ctx.price(model, prompt, completion)
        if price is None:
            unpriced[model] = None
        else:
            cost += price
    from labmgr.pricing import BATCH_DISCOUNT

    return Estimate(
        batch_cost=cost * BATCH_DISCOUNT,
        requests=len(calls),
        samples=new_samples,
        cached_samples=total - new_samples,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost=cost,
        judge_requests=rows * len(judges),
        unpriced_models=tuple(unpriced),
    )
