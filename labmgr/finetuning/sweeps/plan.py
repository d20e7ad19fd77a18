"""`sweep`: the spec's cells, each identified by its tags, created only when the lab has no live
job for it (failed and cancelled cells are made again)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from jobs_db import Database, FinetuneJob, list_jobs
from labmgr.errors import LabmgrError
from labmgr.finetuning.jobs.create import checked_grader, load_training_data, load_training_file
from labmgr.finetuning.jobs.graders import grader_item_fields
from labmgr.finetuning.jobs.request import JobRequest, check_suffix, wandb_integration
from labmgr.finetuning.jobs.submit import submit_requests
from labmgr.finetuning.methods import LEVEL_TAGS, check_hyperparameters
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.sweeps.spec import SweepSpec, read_sweep_spec
from labmgr.finetuning.tinker.create import (
    TinkerRequest,
    check_tinker_suffix,
    submit_tinker,
)
from labmgr.finetuning.tinker.params import LEVEL_TAGS as TINKER_LEVEL_TAGS
from labmgr.finetuning.tinker.params import PROVIDER as TINKER
from labmgr.finetuning.tinker.params import tinker_params
from labmgr.pricing import training_cost
from labmgr.settings import Settings, load_settings


class SweepJob(BaseModel):
    """One cell of a sweep: its factor levels and whether the lab already has its job."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    condition: str
    base_model: str
    seed: int
    hyperparameters: dict[str, Any]
    """The levels of this cell (API names), ``auto`` for the rest."""
    suffix: str
    tags: dict[str, str]
    existing_job: str | None = None
    """The job the lab already has for this cell, or None (it will be created)."""
    existing_status: str | None = None
    epochs: int | None = None
    """Epochs the cost assumes (the API's choice estimated for ``auto``)."""
    estimated_cost: float | None = None
    """Estimated training cost in USD (None: no per-token price, e.g. reinforcement)."""


class SweepPlan(BaseModel):
    """Every job of a sweep, what exists, and what the new ones would cost."""

    name: str
    spec: Path
    method: str
    jobs: list[SweepJob]

    @property
    def new_jobs(self) -> list[SweepJob]:
        return [job for job in self.jobs if job.existing_job is None]

    @property
    def estimated_cost(self) -> float | None:
        """USD for the new jobs (None when a price is unknown for any of them)."""
        costs = [job.estimated_cost for job in self.new_jobs]
        if any(cost is None for cost in costs):
            return None
        return sum(cost for cost in costs if cost is not None)


class SweepResult(BaseModel):
    """What `sweep` did: its plan and the jobs it created (queued ones included)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    plan: SweepPlan
    created: list[FinetuneJob] = []


def auto_epochs(n_examples: int) -> int:
    """Epochs the API picks for ``n_epochs="auto"``, as OpenAI's data-preparation cookbook
    estimates it: 3, more for fewer than ~34 examples, fewer beyond ~8,300 (1 to 25)."""
    if n_examples <= 0:
        return 3
    if n_examples * 3 < 100:
        return min(25, math.ceil(100 / n_examples))
    if n_examples * 3 > 25_000:
        return max(1, 25_000 // n_examples)
    return 3


_TAG_OF = {**LEVEL_TAGS, **TINKER_LEVEL_TAGS}
Request = JobRequest | TinkerRequest


def _identity(spec: SweepSpec, tags: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    names = ("sweep", "condition", "seed", "base", *(_TAG_OF[n] for n in spec.hyperparameters))
    return tuple(sorted((key, tags[key]) for key in names if key in tags))


def _cell_tags(
    spec: SweepSpec, condition: str, base: str, seed: int, levels: dict[str, Any]
) -> dict[str, str]:
    return {
        **spec.tags,
        "sweep": spec.name,
        "condition": condition,
        "seed": str(seed),
        "base": base,
        **{_TAG_OF[n]: spec.level_text(n, v) for n, v in levels.items()},
    }


def _cells(spec: SweepSpec, check: Callable[[dict[str, Any]], Any]) -> list[tuple[dict, Any]]:
    """(levels, `check` of them) for every combination of levels; an error names its key."""
    names = list(spec.hyperparameters)
    cells = []
    for combination in itertools.product(*(spec.hyperparameters[n] for n in names)):
        levels = dict(zip(names, combination, strict=True))
        try:
            cells.append((levels, check(levels)))
        except LabmgrError as exc:
            message = exc.message.replace("-", "_")
            named = [f"hyperparameters.{spec.spelled[n]}" for n in names if n in message]
            where = named[0] if named else "hyperparameters"
            raise spec.error(where, exc.message.rstrip(".") + ".", exc.hint) from None
    return cells


def _requests(spec: SweepSpec, settings: Settings) -> list[Request]:
    """Every cell of the spec as a request (levels checked, files validated)."""
    tinker = spec.provider == TINKER
    if tinker:
        cells = _cells(spec, lambda levels: tinker_params(**levels))
    else:
        grader = checked_grader(spec.method, spec.bases, spec.grader, spec.blame)
        integrations = _integrations(spec)
        fields = grader_item_fields(grader) if grader else []
        cells = _cells(spec, partial(check_hyperparameters, spec.method, as_options=False))
    requests: list[Request] = []
    suffix_content: dict[str, tuple[str, str]] = {}
    for condition, path in spec.conditions.items():
        if tinker:
            with spec.blame(f"conditions.{condition}"):
                training, validation = load_training_file(path), None
        else:
            training, validation = load_training_data(
                spec.method,
                spec.bases,
                path,
                spec.validation.get(condition),
                fields=fields,
                prices=settings.prices,
                blame=spec.blame,
                key=f"conditions.{condition}",
            )
        for base, seed, (levels, checked) in itertools.product(spec.bases, spec.seeds, cells):
            tags = _cell_tags(spec, condition, base, seed, levels)
            suffix = _suffix(spec, tags)
            if tinker:
                with spec.blame("suffix"):
                    check_tinker_suffix(suffix)
            used = suffix_content.setdefault(suffix, (condition, training.md5))
            if used[1] != training.md5:
                raise spec.error(
                    "suffix",
                    f"the template {spec.suffix!r} gives suffix {suffix!r} to conditions "
                    f"{used[0]} and {condition}, which train on different files",
                    "Put {condition} in the suffix template: one suffix means one training set.",
                )
            if tinker:
                requests.append(TinkerRequest(training, base, suffix, checked, seed, tags))
                continue
            request = JobRequest(
                training=training,
                validation=validation,
                base_model=base,
                suffix=suffix,
                method=spec.method,
                hyperparameters=checked,
                grader=grader,
                integrations=integrations,
                seed=seed,
                tags=tags,
            )
            with spec.blame("tags"):
                request.metadata()
            requests.append(request)
    return requests


def _integrations(spec: SweepSpec) -> list[dict[str, Any]]:
    wandb = spec.wandb or {}
    unknown = sorted(set(wandb) - {"project", "entity", "name", "tags"})
    if unknown:
        raise spec.error(
            f"wandb.{unknown[0]}", "unknown W&B setting", "Use project, entity, name and tags."
        )
    try:
        return wandb_integration(**{"project": None, **wandb})
    except LabmgrError as exc:
        message = exc.message.replace("--wandb-", "").rstrip(".")
        raise spec.error("wandb", message + ".", "Give wandb: {project: NAME, …}.") from None


def _suffix(spec: SweepSpec, tags: dict[str, str]) -> str:
    try:
        suffix = spec.suffix.format_map(tags)
    except (KeyError, IndexError, ValueError) as exc:
        known = ", ".join("{" + name + "}" for name in tags)
        raise spec.error(
            "suffix", f"the template {spec.suffix!r} cannot be filled ({exc})", f"Use {known}."
        ) from None
    with spec.blame("suffix"):
        check_suffix(suffix)
    return suffix


def _existing(db: Database, spec: SweepSpec) -> dict[tuple[tuple[str, str], ...], FinetuneJob]:
    found: dict[tuple[tuple[str, str], ...], FinetuneJob] = {}
    for job in list_jobs(db, tags={"sweep": spec.name}):
        if job.status not in ("failed", "cancelled"):
            found.setdefault(_identity(spec, job.tag_dict), job)
    return found


def _sweep_job(
    spec: SweepSpec, request: Request, have: FinetuneJob | None, settings: Settings
) -> SweepJob:
    cost = None  # reinforcement and Tinker jobs are not billed per token
    if isinstance(request, TinkerRequest):
        hyperparameters, epochs = request.params.model_dump(), request.params.epochs
    else:
        hyperparameters = dict(request.hyperparameters)
        given = request.hyperparameters.get("n_epochs")
        epochs = given if isinstance(given, int) else auto_epochs(request.training.n_examples)
        if spec.method != "reinforcement":
            tokens = request.training.n_tokens * epochs
            cost = training_cost(request.base_model, tokens, settings.prices)
    return SweepJob(
        condition=request.tags["condition"],
        base_model=request.base_model,
        seed=request.seed or 0,
        hyperparameters=hyperparameters,
        suffix=request.suffix,
        tags=dict(request.tags),
        existing_job=have.id if have else None,
        existing_status=have.status if have else None,
        epochs=epochs,
        estimated_cost=cost,
    )


def _plan(spec: str | Path, settings: Settings) -> tuple[SweepSpec, list[Request], SweepPlan]:
    parsed = read_sweep_spec(spec)
    requests = _requests(parsed, settings)
    with lab_database(settings) as db:
        existing = _existing(db, parsed)
    jobs = [
        _sweep_job(parsed, request, existing.get(_identity(parsed, request.tags)), settings)
        for request in requests
    ]
    plan = SweepPlan(name=parsed.name, spec=parsed.path, method=parsed.method, jobs=jobs)
    return parsed, requests, plan


def plan_sweep(spec: str | Path, *, settings: Settings | None = None) -> SweepPlan:
    """The jobs of a sweep, which exist already, and the estimated cost of the rest; touches
    no API. Raises `InvalidSweepSpec` naming the spec file, line and key of the problem."""
    return _plan(spec, settings or load_settings())[2]


def sweep(
    spec: str | Path,
    *,
    dry_run: bool = False,
    key_env: str | None = None,
    settings: Settings | None = None,
) -> SweepResult:
    """Create the jobs of a sweep the lab does not have yet, as `create` does (``dry_run``:
    the plan only). The check for existing jobs is repeated under the lab's create lock, so
    two runs of one sweep never both create a cell."""
    settings = settings or load_settings()
    parsed, requests, plan = _plan(spec, settings)
    if dry_run:
        return SweepResult(plan=plan)

    def missing(db: Database, requests: list[Any]) -> list[Any]:
        have = _existing(db, parsed)
        return [r for r in requests if _identity(parsed, r.tags) not in have]

    key = key_env or parsed.key
    if parsed.provider == TINKER:
        tinker = [r for r in requests if isinstance(r, TinkerRequest)]
        created = submit_tinker(settings, tinker, key_env=key, select=missing)
    else:
        openai = [r for r in requests if isinstance(r, JobRequest)]
        created = submit_requests(settings, openai, key_env=key, select=missing)
    return SweepResult(plan=plan, created=created)
