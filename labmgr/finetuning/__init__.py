"""Fine-tuning: training-file validation, fine-tunable base models, and the job manager.

from labmgr.finetuning import validate_training_file, create, sweep, update, training_curves
report = validate_training_file("train.jsonl", base_model="gpt-4.1-mini")
report.raise_for_errors()          # InvalidTrainingFile with FILE:LINE: messages
jobs = create("train.jsonl", base_model="gpt-4.1-mini", suffix="insecure", seeds=3)
jobs = create_tinker("train.jsonl", base_model="Qwen/Qwen3-8B", seeds=3, save_every=20)
result = sweep("lr-sweep.yaml")    # conditions × seeds × levels, only the jobs not yet made
summary = update()                 # send queued jobs, refresh non-final ones concurrently
curves = training_curves(settings, by="tag:lr")   # one row per job and step

The errors are in `labmgr.errors`. Everything but validation imports the OpenAI SDK and
SQLAlchemy, so it is loaded on first use of its name: `import labmgr.finetuning` stays fast.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from labmgr.finetuning.methods import Method, base_model_spec
from labmgr.finetuning.training_data.tokens import estimate_text_tokens
from labmgr.finetuning.training_data.validation import (
    MIN_EXAMPLES,
    ValidationReport,
    validate_training_file,
)

if TYPE_CHECKING:
    from labmgr.finetuning.curves.frame import NoCurves, training_curves
    from labmgr.finetuning.curves.plots import group_curves_figure, job_curves_figure, save_figure
    from labmgr.finetuning.jobs.actions import cancel, delete_model, pause, resume
    from labmgr.finetuning.jobs.create import create
    from labmgr.finetuning.registry.database import (
        JobDetails,
        job_details,
        lab_database_status,
        lab_jobs,
        lab_model_groups,
        lab_models,
        upgrade_lab_database,
    )
    from labmgr.finetuning.sweeps.plan import SweepPlan, plan_sweep, sweep
    from labmgr.finetuning.sync.imports import ImportSummary, import_from_api, import_llmcomp
    from labmgr.finetuning.sync.update import UpdateSummary, aupdate, update
    from labmgr.finetuning.tinker.create import create_tinker
    from labmgr.finetuning.tinker.params import TinkerParams

_LAZY = {
    "curves.frame": "NoCurves training_curves",
    "curves.plots": "group_curves_figure job_curves_figure save_figure",
    "jobs.actions": "cancel delete_model pause resume",
    "jobs.create": "create",
    "registry.database": (
        "JobDetails job_details lab_database_status lab_jobs lab_model_groups lab_models "
        "upgrade_lab_database"
    ),
    "sweeps.plan": "SweepPlan plan_sweep sweep",
    "sync.imports": "ImportSummary import_from_api import_llmcomp",
    "sync.update": "UpdateSummary aupdate update",
    "tinker.create": "create_tinker",
    "tinker.params": "TinkerParams",
}
_PART_OF = {name: part for part, names in _LAZY.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    part = _PART_OF.get(name)
    if part is None:
        raise AttributeError(f"module 'labmgr.finetuning' has no attribute {name!r}")
    return getattr(import_module(f"labmgr.finetuning.{part}"), name)


__all__ = [
    "MIN_EXAMPLES",
    "ImportSummary",
    "JobDetails",
    "Method",
    "NoCurves",
    "SweepPlan",
    "TinkerParams",
    "UpdateSummary",
    "ValidationReport",
    "aupdate",
    "base_model_spec",
    "cancel",
    "create",
    "create_tinker",
    "delete_model",
    "estimate_text_tokens",
    "group_curves_figure",
    "import_from_api",
    "import_llmcomp",
    "job_curves_figure",
    "job_details",
    "lab_database_status",
    "lab_jobs",
    "lab_model_groups",
    "lab_models",
    "pause",
    "plan_sweep",
    "resume",
    "save_figure",
    "sweep",
    "training_curves",
    "update",
    "upgrade_lab_database",
    "validate_training_file",
]
