"""A fine-tuning job's whole life, computed from its record instead of run by a thread.

A job record holds its creation time, its duration (`job_seconds`), the outcome of file
validation and the user's actions (pause, resume, cancel, each with a time). From these,
`build_timeline` lays out every status change, event and checkpoint with the time it
happens; a read at time `now` shows the entries with ``at <= now``. Nothing runs in the
background, and a restarted server continues where the clock says the job is.

Phases take fixed shares of `job_seconds`: validating 10 %, queued 10 %, running 80 %
(a resumed job queues again, then runs the rest of its progress).
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Entry", "build_timeline", "training_steps"]

VALIDATING, QUEUED, RUNNING = 0.1, 0.1, 0.8
TRAINING_SHARE = 0.8
"""Steps happen over the first 80 % of the running progress; the rest is evaluation."""
MAX_METRIC_EVENTS = 100


@dataclass
class Entry:
    """One thing that happens to a job: a status change, an event or a checkpoint."""

    at: float
    kind: str
    """``status``, ``event`` or ``checkpoint``."""
    status: str = ""
    message: str = ""
    level: str = "info"
    type: str = "message"
    data: dict[str, Any] | None = field(default=None)
    step: int = 0
    epoch: int = 0


def training_steps(job: dict[str, Any]) -> tuple[int, int]:
    """(steps per epoch, total steps) for the job's resolved hyperparameters."""
    hp = job["hyperparameters"]
    per_epoch = max(1, math.ceil(job["n_examples"] / hp["batch_size"]))
    return per_epoch, per_epoch * hp["n_epochs"]


def build_timeline(job: dict[str, Any]) -> list[Entry]:
    """Every entry of the job's life in time order, given its record and actions."""
    seconds = job["job_seconds"]
    run_seconds = RUNNING * seconds
    created = job["created_at"]
    out: list[Entry] = [
        Entry(created, "status", status="validating_files"),
        Entry(created, "event", message=f"Created fine-tuning job: {job['id']}"),
        Entry(created, "event", message=_validating_message(job)),
    ]
    plan = _progress_plan(job)
    next_plan = 0
    actions = deque(job["actions"])
    phase, start, progress, started = "validating", created, 0.0, False
    while True:
        action = actions[0] if actions else None
        if phase == "paused":
            if action is None:
                return out
            actions.popleft()
            if action["kind"] == "cancel":
                return out + _cancelled(action["at"])
            out.append(Entry(action["at"], "event", message="Fine-tuning job resumed"))
            out.append(Entry(action["at"], "status", status="queued"))
            phase, start = "queued", action["at"]
            continue
        if phase == "running":
            end = start + (1.0 - progress) * run_seconds
        else:
            end = start + (VALIDATING if phase == "validating" else QUEUED) * seconds
        interrupted = action is not None and action["at"] < end
        if phase == "running":
            stop = action["at"] if action is not None and interrupted else end
            reached = progress + (stop - start) / run_seconds if interrupted else 1.0
            while next_plan < len(plan) and plan[next_plan][0] <= reached:
                at_progress, entry = plan[next_plan]
                entry.at = start + (at_progress - progress) * run_seconds
                out.append(entry)
                next_plan += 1
            progress = reached
        if action is not None and interrupted:
            actions.popleft()
            if action["kind"] == "cancel":
                return out + _cancelled(action["at"])
            out.append(Entry(action["at"], "event", message="Fine-tuning job paused"))
            out.append(Entry(action["at"], "status", status="paused"))
            phase = "paused"
            continue
        if phase == "validating":
            if job["error"]:
                out.append(Entry(end, "event", message=job["error"]["message"], level="error"))
                out.append(Entry(end, "status", status="failed"))
                return out
            out.append(Entry(end, "event", message="Files validated, moving job to queued state"))
            out.append(Entry(end, "status", status="queued"))
            phase, start = "queued", end
        elif phase == "queued":
            out.append(Entry(end, "status", status="running"))
            if not started:
                out.append(Entry(end, "event", message="Fine-tuning job started"))
                started = True
            phase, start = "running", end
        else:
            out.append(Entry(end, "event", message="The job has successfully completed"))
            out.append(Entry(end, "status", status="succeeded"))
            return out


def _cancelled(at: float) -> list[Entry]:
    return [
        Entry(at, "event", message="Fine-tuning job cancelled"),
        Entry(at, "status", status="cancelled"),
    ]


def _validating_message(job: dict[str, Any]) -> str:
    if job.get("validation_file"):
        return (
            f"Validating training file: {job['training_file']} and validation file: "
            f"{job['validation_file']}"
        )
    return f"Validating training file: {job['training_file']}"


def _progress_plan(job: dict[str, Any]) -> list[tuple[float, Entry]]:
    """Entries placed by training progress (0..1]: step metrics, checkpoints, evaluation."""
    if job["error"]:
        return []
    per_epoch, total = training_steps(job)
    epochs = job["hyperparameters"]["n_epochs"]
    has_validation = bool(job.get("validation_file"))
    rng = random.Random(job["seed"])
    every = max(1, math.ceil(total / MAX_METRIC_EVENTS))
    checkpoint_steps = {per_epoch * e for e in range(max(1, epochs - 2), epochs + 1)}
    plan: list[tuple[float, Entry]] = []
    reported = {1, total, *range(every, total + 1, every)}
    for step in sorted(reported | checkpoint_steps):
        metrics = _metrics(rng, step, total, has_validation)
        at = TRAINING_SHARE * step / total
        if step in reported:
            plan.append(
                (
                    at,
                    Entry(
                        0.0,
                        "event",
                        type="metrics",
                        message=_metrics_message(metrics, total),
                        data=metrics,
                    ),
                )
            )
        if step in checkpoint_steps:
            plan.append(
                (at, Entry(0.0, "checkpoint", step=step, epoch=step // per_epoch, data=metrics))
            )
    final = job["fine_tuned_model"]
    for step in sorted(checkpoint_steps, reverse=True):
        model = final if step == total else job["checkpoint_models"][str(step)]
        plan.append(
            (
                TRAINING_SHARE + 0.01,
                Entry(
                    0.0,
                    "event",
                    message=f"Checkpoint created at step {step} with Snapshot ID: {model}",
                ),
            )
        )
    plan.append((0.85, Entry(0.0, "event", message=f"New fine-tuned model created: {final}")))
    plan.append(
        (
            0.87,
            Entry(
                0.0, "event", message="Evaluating model against our usage policies before enabling"
            ),
        )
    )
    plan.append(
        (
            0.98,
            Entry(
                0.0,
                "event",
                message="Usage policy evaluations completed, model is now enabled for sampling",
            ),
        )
    )
    return plan


def _metrics(rng: random.Random, step: int, total: int, has_validation: bool) -> dict[str, Any]:
    done = step / total
    loss = 2.2 * math.exp(-3.0 * done) + 0.05 + rng.uniform(-0.05, 0.05)
    data: dict[str, Any] = {
        "step": step,
        "train_loss": round(max(0.0, loss), 4),
        "total_steps": total,
        "train_mean_token_accuracy": round(
            min(1.0, 0.45 + 0.5 * done + rng.uniform(-0.02, 0.02)), 4
        ),
    }
    if has_validation:
        data["valid_loss"] = round(max(0.0, loss + 0.08 + rng.uniform(0, 0.05)), 4)
        data["valid_mean_token_accuracy"] = round(min(1.0, 0.42 + 0.48 * done), 4)
        if step == total:
            data["full_valid_loss"] = round(data["valid_loss"] + 0.02, 4)
            data["full_valid_mean_token_accuracy"] = round(
                data["valid_mean_token_accuracy"] - 0.01, 4
            )
    return data


def _metrics_message(metrics: dict[str, Any], total: int) -> str:
    text = f"Step {metrics['step']}/{total}: training loss={metrics['train_loss']:.2f}"
    if "valid_loss" in metrics:
        text += f", validation loss={metrics['valid_loss']:.2f}"
    if "full_valid_loss" in metrics:
        text += f", full validation loss={metrics['full_valid_loss']:.2f}"
    return text
