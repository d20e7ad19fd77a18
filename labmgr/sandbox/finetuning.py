"""`/v1/fine_tuning/jobs`: create, list, retrieve, cancel, pause, resume, events, checkpoints;
the first read that finds a job succeeded registers its models."""

from __future__ import annotations

import base64
import json
import math
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.behaviour import persona_from_examples
from labmgr.sandbox.errors import APIError, bad_request
from labmgr.sandbox.files import create_file
from labmgr.sandbox.job_create import build_job
from labmgr.sandbox.job_timeline import Entry, build_timeline, results_csv, training_steps
from labmgr.sandbox.protocol import Request, Response

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox


TERMINAL = ("succeeded", "failed", "cancelled")
_CHECKPOINT_METRICS = """train_loss train_mean_token_accuracy valid_loss valid_mean_token_accuracy
full_valid_loss full_valid_mean_token_accuracy""".split()  # noqa: SIM905
DAY = 24 * 3600


def _timeline(sb: Sandbox, job: dict[str, Any]) -> list[Entry]:
    cache = sb.timelines
    hit = cache.get(job["id"])
    if hit is None or hit[0] != len(job["actions"]):
        hit = cache[job["id"]] = (len(job["actions"]), build_timeline(job))
    return hit[1]


def _status(sb: Sandbox, job: dict[str, Any], now: float) -> tuple[str, float, float | None]:
    """The status at `now`, since when, and when the job will succeed (None: it won't)."""
    status, since, succeeds = "validating_files", job["created_at"], None
    for entry in _timeline(sb, job):
        if entry.kind == "status" and entry.at <= now:
            status, since = entry.status, entry.at
        elif entry.kind == "status" and entry.status == "succeeded":
            succeeds = entry.at
    return status, since, succeeds


def job_view(sb: Sandbox, job: dict[str, Any], now: float) -> dict[str, Any]:
    """The job as `GET /v1/fine_tuning/jobs/{id}` shows it at `now`."""
    status, since, succeeds = _status(sb, job, now)
    finished_at = int(since) if status in TERMINAL else None
    if status == "succeeded" and not job.get("settled"):
        _settle(sb, job)
    hp = job["requested_hyperparameters" if status == "validating_files" else "hyperparameters"]
    section = {"hyperparameters": hp} | ({"grader": job["grader"]} if job.get("grader") else {})
    return {
        "id": job["id"],
        "object": "fine_tuning.job",
        "created_at": int(job["created_at"]),
        "model": job["model"],
        "organization_id": job["organization_id"],
        "training_file": job["training_file"],
        "validation_file": job["validation_file"],
        "status": status,
        "fine_tuned_model": job["fine_tuned_model"] if status == "succeeded" else None,
        "finished_at": finished_at,
        "trained_tokens": job["trained_tokens"] if status == "succeeded" else None,
        "error": job["error"] if status == "failed" else None,
        "estimated_finish": math.ceil(succeeds) if status == "running" and succeeds else None,
        "result_files": [job["result_file"]] if job.get("result_file") else [],
        "seed": job["seed"],
        "hyperparameters": {
            k: hp[k] for k in ("batch_size", "learning_rate_multiplier", "n_epochs")
        },
        "method": {"type": job["method"], job["method"]: section},
        "integrations": job["integrations"],
        "metadata": job["metadata"],
        "user_provided_suffix": job["suffix"],
    }


def _settle(sb: Sandbox, job: dict[str, Any]) -> None:
    finished = next(e.at for e in _timeline(sb, job) if e.status == "succeeded")
    _register_models(sb, job, finished)
    # The API serves a results file base64-encoded; it decodes to the per-step CSV.
    results = create_file(
        sb,
        scope=job["scope"],
        filename="step_metrics.csv",
        purpose="fine-tune-results",
        content=base64.b64encode(results_csv(job).encode()),
        created_at=finished,
    )
    job["result_file"] = results["id"]
    job["settled"] = True
    sb.store.save()


def _register_models(sb: Sandbox, job: dict[str, Any], finished: float) -> None:
    content = sb.store.blob(f"job-{job['id']}") or b""
    examples = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
    _, total = training_steps(job)
    epochs = job["hyperparameters"]["n_epochs"]
    for step, model in job["checkpoint_models"].items():
        if model in sb.store.deleted_models:
            continue
        persona = persona_from_examples(examples, epochs * int(step) / total)
        sb.simulator.register(model, base=job["base_snapshot"], persona=persona)
        sb.store.models.setdefault(
            model,
            {
                "id": model,
                "created": int(finished),
                "owned_by": job["organization_id"],
                "scope": job["scope"],
                "job": job["id"],
                "base": job["base_snapshot"],
            },
        )


def settle_due(sb: Sandbox, now: float) -> None:
    """Settle every job that has succeeded by `now` but was not looked at since."""
    for job in list(sb.store.jobs.values()):
        if not job.get("settled") and not job.get("final") and job["error"] is None:
            status = _status(sb, job, now)[0]
            if status == "succeeded":
                _settle(sb, job)
            elif status in TERMINAL:
                job["final"] = True


def restore(sb: Sandbox) -> None:
    """After loading a saved state, make the settled jobs' models answerable again."""
    for job in sb.store.jobs.values():
        if job.get("settled"):
            finished = sb.store.models.get(job["fine_tuned_model"], {}).get("created", 0)
            _register_models(sb, job, finished)


def _owned(req: Request, sb: Sandbox) -> dict[str, Any]:
    return req.owned(sb.store.jobs, "Could not find fine-tuning job {id}.", "fine_tuning_job_id")


async def create(sb: Sandbox, req: Request) -> Response:
    body = req.json()
    now = sb.now()
    _check_daily_limit(sb, req, now)
    job, content = build_job(sb, req.account, body, now)
    sb.store.put_blob(f"job-{job['id']}", content)
    sb.store.jobs[job["id"]] = job
    sb.store.save()
    return Response(job_view(sb, job, now))


def _check_daily_limit(sb: Sandbox, req: Request, now: float) -> None:
    limit = sb.faults.daily_job_limit
    if limit is None:
        return
    organization = req.account.organization
    recent = sum(
        1
        for job in sb.store.jobs.values()
        if job["organization_id"] == organization and job["created_at"] > now - DAY
    )
    if recent >= limit:
        message = (
            "This fine-tune request has been rate-limited. Your organization has reached the "
            f"maximum of {limit} fine-tuning requests per day. Please try again later."
        )
        raise APIError(429, message, code="daily_rate_limit_exceeded")


async def list_jobs(sb: Sandbox, req: Request) -> Response:
    now = sb.now()
    wanted = {
        key[len("metadata[") : -1]: value
        for key, value in req.query.items()
        if key.startswith("metadata[") and key.endswith("]")
    }
    scope = req.account.scope
    jobs = [
        job
        for job in reversed(sb.store.jobs.values())
        if job["scope"] == scope
        and all((job["metadata"] or {}).get(k) == v for k, v in wanted.items())
    ]
    page = req.page(jobs, 20, 100, first_last=False)
    page["data"] = [job_view(sb, job, now) for job in page["data"]]
    return Response(page)


async def retrieve(sb: Sandbox, req: Request) -> Response:
    return Response(job_view(sb, _owned(req, sb), sb.now()))


def _act(kind: str, allowed: tuple[str, ...], verb: str):
    async def handler(sb: Sandbox, req: Request) -> Response:
        job = _owned(req, sb)
        now = sb.now()
        status = _status(sb, job, now)[0]
        if status not in allowed:
            raise bad_request(
                f"Job {job['id']} is {status} and cannot be {verb}d "
                f"(only jobs that are {', '.join(allowed)} can).",
                param="fine_tuning_job_id",
            )
        job["actions"].append({"kind": kind, "at": now})
        sb.store.save()
        return Response(job_view(sb, job, now))

    return handler


cancel = _act("cancel", ("validating_files", "queued", "running", "paused"), "cancel")
pause = _act("pause", ("queued", "running"), "pause")
resume = _act("resume", ("paused",), "resume")


async def events(sb: Sandbox, req: Request) -> Response:
    job = _owned(req, sb)
    now = sb.now()
    token = job["id"].removeprefix("ftjob-")[:12]
    items = [
        {
            "object": "fine_tuning.job.event",
            "id": f"ftevent-{token}{index:05d}",
            "created_at": int(entry.at),
            "level": entry.level,
            "message": entry.message,
            "data": entry.data if entry.type == "metrics" else {},
            "type": entry.type,
        }
        for index, entry in enumerate(e for e in _timeline(sb, job) if e.kind == "event")
        if entry.at <= now
    ]
    items.reverse()
    return Response(req.page(items, 20, 100, first_last=False))


async def checkpoints(sb: Sandbox, req: Request) -> Response:
    job = _owned(req, sb)
    now = sb.now()
    items = [
        {
            "object": "fine_tuning.job.checkpoint",
            "id": job["checkpoint_ids"][str(entry.step)],
            "created_at": int(entry.at),
            "fine_tuned_model_checkpoint": job["checkpoint_models"][str(entry.step)],
            "fine_tuning_job_id": job["id"],
            "step_number": entry.step,
            "metrics": {"step": float(entry.step)}
            | {k: data[k] for k in _CHECKPOINT_METRICS if data.get(k) is not None},
        }
        for entry in reversed(_timeline(sb, job))
        if entry.kind == "checkpoint" and entry.at <= now
        for data in [entry.data or {}]
    ]
    return Response(req.page(items, 10, 100))
