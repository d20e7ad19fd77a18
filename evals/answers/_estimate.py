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
    from evals.runner import Askable, Call, PriceFunction


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

    @classmethod
    def priced(
        cls,
        bills: Sequence[tuple[str, int, int]],
        price: PriceFunction,
        *,
        cached_samples: int,
        samples: int | None = None,
        judge_bills: Sequence[tuple[str, int, int]] = (),
        judge_requests: int = 0,
    ) -> Estimate:
        """The estimate of requests `bills` (model, prompt tokens, completion tokens) and of
        `judge_bills` (priced, not counted in the tokens), at `price`."""
        from labmgr.pricing import BATCH_DISCOUNT

        cost = 0.0
        unpriced: dict[str, None] = {}
        for model, prompt, completion in [*bills, *judge_bills]:
            dollars = price(model, prompt, completion)
            if dollars is None:
                unpriced[model] = None
            else:
                cost += dollars
        return cls(
            requests=len(bills),
            samples=len(bills) if samples is None else samples,
            cached_samples=cached_samples,
            prompt_tokens=sum(prompt for _, prompt, _ in bills),
            completion_tokens=sum(completion for _, _, completion in bills),
            cost=cost,
            judge_requests=judge_requests,
            unpriced_models=tuple(unpriced),
            batch_cost=cost * BATCH_DISCOUNT,
        )

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
    per_sample = question.expected_completion_tokens()
    bills = [call_bill(call, per_sample * len(call.sample_ixs)) for call in calls]
    new_samples = sum(len(call.sample_ixs) for call in calls)
    total = sum(p.samples for p in planned if p.request is not None)
    judges = question.judge_questions()
    rows = new_samples // max(1, question.cached_samples_per_row)  # each judged once
    judge_bills = [
        (
            judge.model,
            (count_tokens(judge.prompt_template) + per_sample) * rows,
            judge.expected_completion_tokens() * rows,
        )
        for judge in judges.values()
    ]
    return Estimate.priced(
        bills,
        ctx.price,
        samples=new_samples,
        cached_samples=total - new_samples,
        judge_bills=judge_bills,
        judge_requests=rows * len(judges),
    )


def call_bill(call: Call, completion_tokens: int) -> tuple[str, int, int]:
    """A call's (model, prompt tokens counted roughly, `completion_tokens`)."""
    prompt = sum(count_tokens(m.get("content")) for m in call.request.messages)
    return call.request.model, prompt, completion_tokens
