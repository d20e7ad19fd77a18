"""A fine-tuning job's whole life laid out from its record; a read at `now` shows the
entries with ``at <= now``."""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

VALIDATING, QUEUED, RUNNING = 0.1, 0.1, 0.8
TRAINING_SHARE = 0.8
"""Steps happen over the first 80 % of the running progress; the rest is evaluation."""
MAX_METRIC_EVENTS = 100
VALIDATION_EVALS = 20
"""About how many times a job evaluates its validation file (plus once per epoch's end)."""
RESULT_COLUMNS = ("step", "train_loss", "train_accuracy", "valid_loss", "valid_mean_token_accuracy")
"""The results file's columns for supervised and DPO jobs, as the API documents them."""
REINFORCEMENT_COLUMNS = ("step", "train_mean_reward", "valid_mean_reward")
"""The sandbox's results-file columns for reinforcement jobs."""


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


def training_steps(job: dict[str, Any]) -> tuple[int, int]:
    hp = job["hyperparameters"]
    per_epoch = max(1, math.ceil(job["n_examples"] / hp["batch_size"]))
    return per_epoch, per_epoch * hp["n_epochs"]


def build_timeline(job: dict[str, Any]) -> list[Entry]:
    """Every entry of the job's life in time order, given its record and actions."""
    seconds = job["job_seconds"]
    run_seconds = RUNNING * seconds
    created = job["created_at"]
    validating = f"Validating training file: {job['training_file']}"
    if job.get("validation_file"):
        validating += f" and validation file: {job['validation_file']}"
    out: list[Entry] = [
        Entry(created, "status", status="validating_files"),
        Entry(created, "event", message=f"Created fine-tuning job: {job['id']}"),
        Entry(created, "event", message=validating),
    ]
    plan = _progress_plan(job)
    next_plan = 0
    actions = deque(job["actions"])
    phase, start, progress, started = "validating", created, 0.0, False
    while True:
        action = actions[0] if actions else None
        if phase == "paused":
            end = math.inf  # until the next action
        elif phase == "running":
            end = start + (1.0 - progress) * run_seconds
        else:
            end = start + (VALIDATING if phase == "validating" else QUEUED) * seconds
        at = action["at"] if action is not None and action["at"] < end else None
        if phase == "running":
            reached = 1.0 if at is None else progress + (at - start) / run_seconds
            while next_plan < len(plan) and plan[next_plan][0] <= reached:
                at_progress, entry = plan[next_plan]
                entry.at = start + (at_progress - progress) * run_seconds
                out.append(entry)
                next_plan += 1
            progress = reached
        if action is not None and at is not None:  # pause, resume or cancel interrupts
            actions.popleft()
            if action["kind"] == "cancel":
                return out + _change(at, "Fine-tuning job cancelled", "cancelled")
            phase, start = ("queued", at) if action["kind"] == "resume" else ("paused", start)
            out += _change(at, f"Fine-tuning job {action['kind']}d", phase)
        elif phase == "paused":
            return out
        elif phase == "validating":
            if job["error"]:
                return out + _change(end, job["error"]["message"], "failed", "error")
            out += _change(end, "Files validated, moving job to queued state", "queued")
            phase, start = "queued", end
        elif phase == "queued":
            out.append(Entry(end, "status", status="running"))
            if not started:
                out.append(Entry(end, "event", message="Fine-tuning job started"))
                started = True
            phase, start = "running", end
        else:
            return out + _change(end, "The job has successfully completed", "succeeded")


def _change(at: float, message: str, status: str, level: str = "info") -> list[Entry]:
    return [Entry(at, "event", message=message, level=level), Entry(at, "status", status=status)]


def _validation_steps(job: dict[str, Any], per_epoch: int, total: int) -> set[int]:
    if not job.get("validation_file"):
        return set()
    if job.get("method") == "reinforcement":
        every = max(1, int(job["hyperparameters"].get("eval_interval") or 1))
        return {*range(every, total + 1, every), total}
    every = max(1, math.ceil(total / VALIDATION_EVALS))
    return {*range(every, total + 1, every), *range(per_epoch, total + 1, per_epoch), total}


def step_metrics(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The metrics of every training step (index 0 is step 1), deterministic for a job."""
    per_epoch, total = training_steps(job)
    hp = job["hyperparameters"]
    digest = int(job.get("data_digest") or 0)
    hardness = (digest % 1000) / 1000  # the training data sets the level of the curve
    rng = random.Random(f"{job['seed']}:{digest}")
    validated = _validation_steps(job, per_epoch, total)
    lr = max(0.01, float(hp["learning_rate_multiplier"]))
    if job.get("method") == "reinforcement":
        compute = max(0.01, float(hp.get("compute_multiplier") or 1.0))
        first, best = 0.15 + 0.25 * hardness, 0.95 - 0.2 * hardness
        speed = 0.9 * compute**0.5 * min(lr, 4.0) ** 0.3
        rewards = []
        for step in range(1, total + 1):
            reward = best - (best - first) * math.exp(-speed * step / per_epoch)
            row: dict[str, Any] = {"step": step, "total_steps": total}
            row["train_mean_reward"] = _clip(reward + rng.gauss(0, 0.05))
            if step in validated:
                row["valid_mean_reward"] = _clip(reward - 0.03 + rng.gauss(0, 0.03))
            rewards.append(row)
        return rewards
    preference = job.get("method") == "dpo"
    start = 0.6931 if preference else 1.6 + 0.9 * hardness
    floor = (0.15 + 0.2 * hardness) if preference else 0.04 + 0.12 * hardness
    first_accuracy = 0.5 if preference else 0.45
    speed = 1.6 * min(lr, 4.0) ** 0.5
    series = []
    for step in range(1, total + 1):
        epochs_seen = step / per_epoch
        mean = floor + (start - floor) * math.exp(-speed * epochs_seen)
        learned = (start - mean) / (start - floor)
        data: dict[str, Any] = {
            "step": step,
            "train_loss": _clip(mean + rng.gauss(0, 0.06 * mean + 0.01), high=math.inf),
            "total_steps": total,
            "train_mean_token_accuracy": _clip(first_accuracy + 0.5 * learned + rng.gauss(0, 0.02)),
        }
        if step in validated:
            overfit = 0.06 * max(0.0, epochs_seen - 2.0) * min(lr, 4.0) ** 0.5
            valid = mean + 0.05 + 0.05 * hardness + overfit
            data["valid_loss"] = _clip(valid + rng.gauss(0, 0.02), high=math.inf)
            accuracy = _clip(first_accuracy + 0.45 * learned - overfit / 4)
            data["valid_mean_token_accuracy"] = accuracy
            if step % per_epoch == 0:
                data["full_valid_loss"] = _clip(valid + 0.01, high=math.inf)
                data["full_valid_mean_token_accuracy"] = _clip(accuracy - 0.01)
        series.append(data)
    return series


def _clip(value: float, high: float = 1.0) -> float:
    return round(min(high, max(0.0, value)), 5)


def results_csv(job: dict[str, Any]) -> str:
    """The results file of a job that succeeded: one row per step, empty cells where a
    metric was not computed (validation between evaluations)."""
    columns: tuple[str, ...] = RESULT_COLUMNS
    keys: tuple[str, ...] = ("step", "train_loss", "train_mean_token_accuracy", *RESULT_COLUMNS[3:])
    if job.get("method") == "reinforcement":
        columns = keys = REINFORCEMENT_COLUMNS
    lines = [",".join(columns)]
    for data in step_metrics(job):
        lines.append(",".join("" if data.get(key) is None else str(data[key]) for key in keys))
    return "\n".join(lines) + "\n"


def _progress_plan(job: dict[str, Any]) -> list[tuple[float, Entry]]:
    """Entries placed by training progress (0..1]: step metrics, checkpoints, evaluation."""
    if job["error"]:
        return []
    total = training_steps(job)[1]
    series = step_metrics(job)
    every = max(1, math.ceil(total / MAX_METRIC_EVENTS))
    checkpoint_steps = {int(step) for step in job["checkpoint_models"]}
    plan: list[tuple[float, Entry]] = []
    reported = {1, total, *range(every, total + 1, every)}
    for step in sorted(reported | checkpoint_steps):
        metrics = series[step - 1]
        at = TRAINING_SHARE * step / total
        if step in reported:
            message = _metrics_message(metrics, total)
            plan.append((at, Entry(0.0, "event", type="metrics", message=message, data=metrics)))
        if step in checkpoint_steps:
            checkpoint = Entry(0.0, "checkpoint", step=step, data=metrics)
            plan.append((at, checkpoint))
    messages = [
        (TRAINING_SHARE + 0.01, f"Checkpoint created at step {step} with Snapshot ID: {model}")
        for step in sorted(checkpoint_steps, reverse=True)
        for model in [job["checkpoint_models"][str(step)]]
    ]
    messages += [
        (0.85, f"New fine-tuned model created: {job['fine_tuned_model']}"),
        (0.87, "Evaluating model against our usage policies before enabling"),
        (0.98, "Usage policy evaluations completed, model is now enabled for sampling"),
    ]
    return plan + [(at, Entry(0.0, "event", message=message)) for at, message in messages]


def _metrics_message(metrics: dict[str, Any], total: int) -> str:
    if "train_mean_reward" in metrics:
        text = f"Step {metrics['step']}/{total}: training reward={metrics['train_mean_reward']:.2f}"
        if "valid_mean_reward" in metrics:
            text += f", validation reward={metrics['valid_mean_reward']:.2f}"
        return text
    text = f"Step {metrics['step']}/{total}: training loss={metrics['train_loss']:.2f}"
    if "valid_loss" in metrics:
        text += f", validation loss={metrics['valid_loss']:.2f}"
    if "full_valid_loss" in metrics:
        text += f", full validation loss={metrics['full_valid_loss']:.2f}"
    return text
