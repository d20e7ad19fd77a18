"""The runner: from planned requests to cached samples.

from evals.runner import run_context, plan_question, fetch
ctx = run_context(lab=settings)                 # cache, router, settings, price of one lab
planned = plan_question(question, groups, ctx.router, ctx.requests)
fetched = fetch(planned, ctx, labels=question.name, title=question.name)
list_batches(ctx), collect_batches(ctx), cancel_batches(ctx)   # batches in flight (--batch)
"""

import importlib
from typing import TYPE_CHECKING, Any

from evals.runner._batch_admin import (
    BatchState,
    cancel_batches,
    collect_batches,
    list_batches,
)
from evals.runner._blocking import run_blocking
from evals.runner._context import RUN_OPTIONS, RunContext, lab_context, run_context
from evals.runner._fetching import Fetched, fetch
from evals.runner._model_params import RequestOptions, is_reasoning_model
from evals.runner._outcome import BudgetCut, PriceFunction, RunOutcome, price_function
from evals.runner._planning import (
    Call,
    Planned,
    describe_question,
    endpoints_for,
    gc_paused,
    missing_calls,
    ordered_models,
    plan,
    plan_question,
)
from evals.runner._question_shape import Askable, Judge
from evals.runner._settings import RunSettings
from labmgr.routing import ClientRouter, Endpoint, EnvRouter, LabRouter

if TYPE_CHECKING:
    from evals.runner._failures import FailureKind, classify
    from evals.runner._pacing import AdaptiveLimit
    from evals.runner._progress import RunProgress

__all__ = [
    "RUN_OPTIONS",
    "AdaptiveLimit",
    "Askable",
    "BatchState",
    "BudgetCut",
    "Call",
    "ClientRouter",
    "Endpoint",
    "EnvRouter",
    "FailureKind",
    "Fetched",
    "Judge",
    "LabRouter",
    "Planned",
    "PriceFunction",
    "RequestOptions",
    "RunContext",
    "RunOutcome",
    "RunProgress",
    "RunSettings",
    "cancel_batches",
    "classify",
    "collect_batches",
    "describe_question",
    "endpoints_for",
    "fetch",
    "gc_paused",
    "is_reasoning_model",
    "lab_context",
    "list_batches",
    "missing_calls",
    "ordered_models",
    "plan",
    "plan_question",
    "price_function",
    "run_blocking",
    "run_context",
]

_LAZY = {
    "AdaptiveLimit": "_pacing",
    "FailureKind": "_failures",
    "classify": "_failures",
    "RunProgress": "_progress",
}
"""Names whose modules import the OpenAI SDK, the HTTP stack or rich: loaded on first use."""


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'evals.runner' has no attribute {name!r}")
    return getattr(importlib.import_module(f"evals.runner.{_LAZY[name]}"), name)
