"""Sweeps: conditions × seeds × hyperparameter levels × base models, from a YAML spec."""

from labmgr.finetuning.sweeps.plan import SweepJob, SweepPlan, SweepResult, plan_sweep, sweep

__all__ = ["SweepJob", "SweepPlan", "SweepResult", "plan_sweep", "sweep"]
