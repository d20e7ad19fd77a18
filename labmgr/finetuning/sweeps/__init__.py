"""Sweeps: conditions × seeds × hyperparameter levels × base models, from a YAML spec."""

from labmgr.finetuning.sweeps.plan import SweepPlan, plan_sweep, sweep

__all__ = ["SweepPlan", "plan_sweep", "sweep"]
