"""Creating fine-tuning jobs (checked, uploaded once, queued past the daily limit) and acting
on them afterwards."""

from labmgr.finetuning.jobs.actions import cancel, delete_model, pause, resume
from labmgr.finetuning.jobs.create import create, load_training_data
from labmgr.finetuning.jobs.graders import check_grader, grader_item_fields, load_grader
from labmgr.finetuning.jobs.queue import QueueOutcome, submit_queued
from labmgr.finetuning.jobs.request import JobRequest, TrainingData, wandb_integration
from labmgr.finetuning.jobs.submit import submit_requests
from labmgr.finetuning.jobs.suffixes import check_suffix

__all__ = [
    "JobRequest",
    "QueueOutcome",
    "TrainingData",
    "cancel",
    "check_grader",
    "check_suffix",
    "create",
    "delete_model",
    "grader_item_fields",
    "load_grader",
    "load_training_data",
    "pause",
    "resume",
    "submit_queued",
    "submit_requests",
    "wandb_integration",
]
