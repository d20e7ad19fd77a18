"""Sweeps: conditions × seeds × hyperparameter levels × base models, from a YAML spec."""

from labmgr.finetuning.sweeps.plan import (
    SweepJob,
    SweepPlan,
    SweepResult,
    auto_epochs,
    plan_sweep,
    sweep,
)
from labmgr.finetuning.sweeps.spec import SweepSpec, read_sweep_spec

__all__ = [
    "SweepJob",
    "SweepPlan",
    "SweepResult",
    "SweepSpec",
    "auto_epochs",
    "plan_sweep",
    "read_sweep_spec",
    "sweep",
]
