"""The async runner: limits, retries, error classes, progress."""

from evals.runner.engine import RunOutcome, Work, run_works
from evals.runner.errors import Failure, FailureKind, classify

__all__ = ["Failure", "FailureKind", "RunOutcome", "Work", "classify", "run_works"]
