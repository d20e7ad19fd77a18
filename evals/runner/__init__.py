"""The runner: from planned requests to cached samples. Who serves each model (routing), how a
run behaves (settings, limits, retries), what it costs, and what happened (the outcome).

from evals.runner import run_context, plan_question, fetch
ctx = run_context(lab=settings)                 # cache, router, settings, price of one lab
planned = plan_question(question, groups, ctx.router, ctx.requests)
fetched = fetch(planned, ctx, labels=question.name, title=question.name)
list_batches(ctx), collect_batches(ctx), cancel_batches(ctx)   # batches in flight (--batch)

The OpenAI SDK, the HTTP stack and rich are imported only when something is bought:
`classify`, `RunProgress`, `run_blocking` are loaded on first use.
"""

from typing import TYPE_CHECKING, Any

from evals.runner._batch_admin import (
    BatchState,
    cancel_batches,
    collect_batches,
    list_batches,
)
from evals.runner._calls import Call, interleave, split_calls
from evals.runner._context import (
    CONTEXT_OPTIONS,
    RUN_OPTIONS,
    RunContext,
    lab_context,
    run_context,
)
from evals.runner._fetching import Fetched, fetch
from evals.runner._limits import AdaptiveLimit
from evals.runner._model_check import ModelChecks
from evals.runner._model_params import RequestOptions, is_reasoning_model
from evals.runner._outcome import BudgetCut, PriceFunction, RunOutcome
from evals.runner._planning import (
    Planned,
    describe_question,
    endpoints_for,
    gc_paused,
    missing_calls,
    ordered_models,
    plan,
    plan_question,
)
from evals.runner._prices import TablePrice, price_function
from evals.runner._question_shape import Askable, Judge
from evals.runner._settings import RunSettings
from labmgr.routing import DEFAULT_BASE_URL, ClientRouter, Endpoint, EnvRouter, LabRouter

if TYPE_CHECKING:
    from evals.runner._blocking import run_blocking
    from evals.runner._failures import Failure, FailureKind, classify, retry_after_seconds
    from evals.runner._progress import ModelProgress, RunProgress

__all__ = [
    "CONTEXT_OPTIONS",
    "DEFAULT_BASE_URL",
    "RUN_OPTIONS",
    "AdaptiveLimit",
    "Askable",
    "BatchState",
    "BudgetCut",
    "Call",
    "ClientRouter",
    "Endpoint",
    "EnvRouter",
    "Failure",
    "FailureKind",
    "Fetched",
    "Judge",
    "LabRouter",
    "ModelChecks",
    "ModelProgress",
    "Planned",
    "PriceFunction",
    "RequestOptions",
    "RunContext",
    "RunOutcome",
    "RunProgress",
    "RunSettings",
    "TablePrice",
    "cancel_batches",
    "classify",
    "collect_batches",
    "describe_question",
    "endpoints_for",
    "fetch",
    "gc_paused",
    "interleave",
    "is_reasoning_model",
    "lab_context",
    "list_batches",
    "missing_calls",
    "ordered_models",
    "plan",
    "plan_question",
    "price_function",
    "retry_after_seconds",
    "run_blocking",
    "run_context",
    "split_calls",
]

_LAZY = {
    "run_blocking": "evals.runner._blocking",
    "Failure": "evals.runner._failures",
    "FailureKind": "evals.runner._failures",
    "classify": "evals.runner._failures",
    "retry_after_seconds": "evals.runner._failures",
    "ModelProgress": "evals.runner._progress",
    "RunProgress": "evals.runner._progress",
}


def __getattr__(name: str) -> Any:
    # The engine imports the OpenAI SDK and the HTTP stack: only when something is bought.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evals.runner' has no attribute {name!r}")
    if module == "evals.runner._failures":
        from evals.runner import _failures

        return getattr(_failures, name)
    if module == "evals.runner._blocking":
        from evals.runner import _blocking

        return getattr(_blocking, name)
    from evals.runner import _progress

    return getattr(_progress, name)
