"""`/v1/fine_tuning/jobs`: create (the body and its training file checked as the real API
checks them, as a job record), list, retrieve, cancel, pause, resume, events, checkpoints;
the first read that finds a job succeeded registers its models."""

from __future__ import annotations

import base64
import json
import math
import random
import zlib
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.behaviour import (
    CATALOGUE,
    content_text,
    count_tokens,
    persona_from_examples,
    served_model_name,
)
from labmgr.sandbox.errors import APIError, bad_request, metadata_param, missing_parameter
from labmgr.sandbox.files import create_file, file_param
from labmgr.sandbox.job_timeline import Entry, build_timeline, results_csv, training_steps
from labmgr.sandbox.protocol import Request, Response
from labmgr.sandbox.store import new_id

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
    limit = sb.faults.daily_job_limit
    if limit is not None:
        org = req.account.organization
        jobs = sb.store.jobs.values()
        if sum(j["organization_id"] == org and j["created_at"] > now - DAY for j in jobs) >= limit:
            message = (
                "This fine-tune request has been rate-limited. Your organization has reached the "
                f"maximum of {limit} fine-tuning requests per day. Please try again later."
            )
            raise APIError(429, message, code="daily_rate_limit_exceeded")
    job, content = build_job(sb, req.account, body, now)
    sb.store.put_blob(f"job-{job['id']}", content)
    sb.store.jobs[job["id"]] = job
    sb.store.save()
    return Response(job_view(sb, job, now))


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


METHODS = ("supervised", "dpo", "reinforcement")
_HYPERPARAMETERS: dict[str, tuple[tuple[str, ...], Any]] = {
    "batch_size": (METHODS, (1, 256)),
    "learning_rate_multiplier": (METHODS, None),
    "n_epochs": (METHODS, (1, 50)),
    "beta": (("dpo",), None),
    "compute_multiplier": (("reinforcement",), None),
    "eval_interval": (("reinforcement",), (1, 10_000)),
    "eval_samples": (("reinforcement",), (1, 100)),
    "reasoning_effort": (("reinforcement",), ("default", "low", "medium", "high")),
}
"""Name → (the methods that take it, its rule: an integer range, a choice, or None for a
positive number). Every method shows the first three; the others when given or resolved."""
_GRADER_TYPES = ("string_check", "text_similarity", "python", "score_model", "multi")
MIN_TRAINING_EXAMPLES = 10
_TRAINING_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


class TrainingFileError(ValueError):
    """A training or validation file the job cannot use; the message names the line."""


def _parse_training_file(content: bytes, method: str, min_examples: int) -> tuple[int, int]:
    """The number of chat (supervised), preference (dpo) or prompt (reinforcement) examples
    in a JSONL file and the tokens one epoch over them costs."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrainingFileError(f"The file is not UTF-8 text (byte {exc.start}).") from exc
    examples, tokens = 0, 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            example = json.loads(line)
        except ValueError:
            raise TrainingFileError(f"Line {number} is not valid JSON.") from None
        if not isinstance(example, dict):
            raise TrainingFileError(f"Line {number} is not a JSON object.")
        if method == "dpo":
            prompt = example.get("input")
            if not isinstance(prompt, dict):
                raise TrainingFileError(
                    f"Line {number} is missing the `input` object of a DPO example."
                )
            tokens += _check_messages(prompt.get("messages"), number, "input.messages", False)
            for field in ("preferred_output", "non_preferred_output"):
                tokens += _check_messages(example.get(field), number, field, True)
        elif method == "reinforcement":  # other keys are fields the grader reads
            tokens += _check_messages(example.get("messages"), number, "messages", False)
            if example["messages"][-1].get("role") == "assistant":
                raise TrainingFileError(
                    f"Line {number}: the last message must not be the assistant's; in "
                    "reinforcement fine-tuning the model writes the answer."
                )
        else:
            tokens += _check_messages(example.get("messages"), number, "messages", True)
        examples += 1
    if examples < min_examples:
        raise TrainingFileError(
            f"The file has {examples} example(s), but must have at least {min_examples} examples."
        )
    return examples, tokens


def _check_messages(messages: Any, number: int, field: str, need_reply: bool) -> int:
    if messages is None:
        raise TrainingFileError(f"Line {number} is missing the `{field}` field.")
    if not isinstance(messages, list) or not messages:
        raise TrainingFileError(f"Line {number}: `{field}` must be a non-empty list of messages.")
    tokens = 0
    for index, message in enumerate(messages):
        where = f"Line {number}, {field}[{index}]"
        if not isinstance(message, dict):
            raise TrainingFileError(f"{where} is not a JSON object.")
        role = message.get("role")
        if not isinstance(role, str) or role not in _TRAINING_ROLES:
            raise TrainingFileError(f"{where} has an invalid role {role!r}.")
        content = message.get("content")
        if content is None and not message.get("tool_calls"):
            raise TrainingFileError(f"{where} is missing `content`.")
        if content is not None and not isinstance(content, str | list):
            raise TrainingFileError(f"{where}: `content` must be a string or a list of parts.")
        tokens += count_tokens(content_text(content))
    if need_reply and not any(m["role"] == "assistant" for m in messages):
        raise TrainingFileError(f"Line {number} has no assistant message to learn from.")
    return tokens


def build_job(
    sb: Sandbox, account: Account, body: dict[str, Any], now: float
) -> tuple[dict[str, Any], bytes]:
    """A new job record and the training content it learns from, or a 400 APIError."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("Missing required parameter: 'model'.", param="model")
    method, requested, grader = _method_and_hyperparameters(body)
    snapshot = _base_snapshot(sb, account, model, method)
    training_id = file_param(sb, account, body, "training_file", "fine-tune")
    if training_id is None:
        raise missing_parameter("training_file")
    validation_id = file_param(sb, account, body, "validation_file", "fine-tune")
    suffix = body.get("suffix")
    if suffix is not None and (not isinstance(suffix, str) or len(suffix) > 64 or ":" in suffix):
        message = "Invalid 'suffix': it must be a string of at most 64 characters without ':'."
        raise bad_request(message, param="suffix")
    metadata = metadata_param(body)
    seed = body.get("seed")
    if seed is None:
        seed = random.randrange(2**31)
    elif not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= 2**31 - 1:
        raise bad_request(
            "Invalid 'seed': expected an integer between 0 and 2147483647.", param="seed"
        )
    integrations = _integrations(body.get("integrations"))

    content = sb.store.blob(training_id) or b""
    error = None
    n_examples, tokens = 0, 0
    try:
        n_examples, tokens = _parse_training_file(content, method, MIN_TRAINING_EXAMPLES)
        if validation_id:
            _parse_training_file(sb.store.blob(validation_id) or b"", method, 1)
    except TrainingFileError as exc:
        name = "validation_file" if validation_id and n_examples > 0 else "training_file"
        error = {
            "code": f"invalid_{name}",
            "message": f"The job failed due to an invalid {name.replace('_', ' ')} "
            f"({body[name]}). {exc}",
            "param": name,
        }
    resolved = _resolve(requested, max(n_examples, 1), method)
    per_epoch = max(1, math.ceil(max(n_examples, 1) / resolved["batch_size"]))
    epochs = resolved["n_epochs"]
    prefix = f"ft:{snapshot}:{account.slug}:{suffix or ''}"
    checkpoint_steps = [per_epoch * e for e in range(max(1, epochs - 2), epochs + 1)]
    final = f"{prefix}:{new_id('', 8)}"
    job = {
        "id": new_id("ftjob-"),
        "scope": account.scope,
        "organization_id": account.organization,
        "created_at": now,
        "job_seconds": sb.config.job_seconds,
        "model": model if model.startswith("ft:") else snapshot,
        "base_snapshot": snapshot,
        "training_file": training_id,
        "validation_file": validation_id,
        "suffix": suffix,
        "seed": seed,
        "metadata": metadata,
        "integrations": integrations,
        "method": method,
        "grader": grader,
        "data_digest": zlib.crc32(content),
        "requested_hyperparameters": requested,
        "hyperparameters": resolved,
        "n_examples": n_examples,
        "trained_tokens": tokens * epochs,
        "error": error,
        "fine_tuned_model": final,
        "checkpoint_models": {  # the last checkpoint is the final model
            str(step): f"{prefix}:{new_id('', 8)}:ckpt-step-{step}"
            if step < checkpoint_steps[-1]
            else final
            for step in checkpoint_steps
        },
        "checkpoint_ids": {str(step): new_id("ftckpt_") for step in checkpoint_steps},
        "actions": [],
    }
    return job, content


def _base_snapshot(sb: Sandbox, account: Account, model: str, method: str) -> str:
    if model.startswith("ft:"):
        record = sb.model_record(model, account)
        if record is not None:
            return str(record["base"])
    else:
        card = CATALOGUE.get(model)
        if card is not None and card.fine_tuning_methods:
            if method not in card.fine_tuning_methods:
                message = (
                    f"Model {model} does not support the '{method}' fine-tuning method "
                    f"(it supports: {', '.join(card.fine_tuning_methods)})."
                )
                raise APIError(400, message, param="method.type", code="invalid_method")
            return served_model_name(model)
    message = f"Model {model} is not available for fine-tuning or does not exist."
    raise APIError(400, message, param="model", code="model_not_available")


def _method_and_hyperparameters(
    body: dict[str, Any],
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    method = body.get("method")
    hyper = body.get("hyperparameters")
    kind = "supervised"
    grader = None
    if method is not None:
        if not isinstance(method, dict) or method.get("type") not in METHODS:
            message = "Invalid 'method.type': expected 'supervised', 'dpo' or 'reinforcement'."
            raise bad_request(message, param="method.type")
        kind = method["type"]
        section = method.get(kind) or {}
        if not isinstance(section, dict):
            raise bad_request(
                f"Invalid 'method.{kind}': expected an object.", param=f"method.{kind}"
            )
        hyper = section.get("hyperparameters", hyper)
        if kind == "reinforcement":
            grader = _grader(section.get("grader"))
    hyper = hyper or {}
    if not isinstance(hyper, dict):
        raise bad_request("Invalid 'hyperparameters': expected an object.", param="hyperparameters")
    names = _names(kind)
    unknown = sorted(set(hyper) - set(names))
    if unknown:
        message = f"Unknown hyperparameter(s) for the {kind} method: {', '.join(unknown)}."
        raise bad_request(message, param="hyperparameters")
    requested = {name: hyper.get(name) for name in names if name in hyper or name in names[:3]}
    for name, value in requested.items():
        if value is None:
            requested[name] = "auto"
        elif value != "auto":
            _check_number(name, value)
    return kind, requested, grader


def _grader(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        message = "Missing required parameter: 'method.reinforcement.grader'."
        raise bad_request(message, param="method.reinforcement.grader")
    if value.get("type") not in _GRADER_TYPES or not isinstance(value.get("name"), str):
        raise bad_request(
            "Invalid 'method.reinforcement.grader': a grader needs a 'name' and a 'type' "
            f"among {', '.join(_GRADER_TYPES)}.",
            param="method.reinforcement.grader",
        )
    return dict(value)


def _integrations(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request("Invalid 'integrations': expected a list.", param="integrations")
    for index, item in enumerate(value):
        settings = item.get("wandb") if isinstance(item, dict) else None
        project = settings.get("project") if isinstance(settings, dict) else None
        if not isinstance(project, str) or not project or item.get("type") != "wandb":
            raise bad_request(
                f"Invalid 'integrations[{index}]': expected {{'type': 'wandb', 'wandb': "
                "{'project': …}}.",
                param=f"integrations[{index}]",
            )
    return [dict(item) for item in value]


def _names(method: str) -> list[str]:
    return [name for name, (methods, _) in _HYPERPARAMETERS.items() if method in methods]


def _check_number(name: str, value: Any) -> None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    rule = _HYPERPARAMETERS[name][1]
    if rule is None:
        ok, expected = number and value > 0, "'auto' or a positive number"
    elif isinstance(rule[0], str):
        ok, expected = value in rule, f"one of {', '.join(rule)}"
    else:
        low, high = rule
        ok = number and isinstance(value, int) and low <= value <= high
        expected = f"'auto' or an integer from {low} to {high}"
    if not ok:
        param = f"hyperparameters.{name}"
        raise bad_request(f"Invalid '{param}': expected {expected}.", param=param)


def _resolve(requested: dict[str, Any], n_examples: int, method: str) -> dict[str, Any]:
    """Numbers for every "auto", chosen from the dataset size as the real API does."""
    resolved = {name: "auto" for name in _names(method)} | requested
    if method == "reinforcement":
        resolved["reasoning_effort"] = requested.get("reasoning_effort", "default")

    def auto(name: str, value: Any) -> None:
        if resolved.get(name) == "auto":
            resolved[name] = value

    auto("n_epochs", 3 if n_examples * 3 >= 100 else min(10, math.ceil(100 / n_examples)))
    auto("batch_size", max(1, min(256, round(n_examples * 0.002))))
    auto("learning_rate_multiplier", 2.0 if resolved["batch_size"] > 1 else 1.8)
    auto("beta", 0.1)
    auto("compute_multiplier", 1.0)
    auto("eval_interval", max(1, math.ceil(n_examples / resolved["batch_size"]) // 2))
    auto("eval_samples", 1)
    return resolved
