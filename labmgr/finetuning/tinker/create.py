"""`create_tinker`: the same checks as an OpenAI job (the training file, the suffix, the
tags, the key) before anything starts, then one job row per seed and a detached worker each."""

from __future__ import annotations

import random
import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jobs_db import Database, FinetuneJob, get_job, upsert_job
from labmgr.accounts import key_env_name, tinker_key, tinker_service_url
from labmgr.errors import LabmgrError, SuffixConflict
from labmgr.finetuning.jobs.create import load_training_file, replicas
from labmgr.finetuning.jobs.request import (
    BASE,
    FILE_NAME,
    MARKER,
    MD5,
    TrainingData,
    check_suffix,
    default_suffix,
    refuse_other_content,
)
from labmgr.finetuning.jobs.submit import create_lock
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.tinker.control import launch_workers
from labmgr.finetuning.tinker.params import (
    PROVIDER,
    LrSchedule,
    TinkerParams,
    TrainOn,
    require_tinker,
    tinker_params,
)
from labmgr.settings import Settings, load_settings


@dataclass(frozen=True)
class TinkerRequest:
    """One Tinker job to start: its checked file, base, suffix, settings and seed."""

    training: TrainingData
    base_model: str
    suffix: str
    params: TinkerParams
    seed: int
    tags: dict[str, str] = field(default_factory=dict)

    def job(self, job_id: str, status: str, key_env: str) -> FinetuneJob:
        """The job row (never holds the key, only the name of its variable)."""
        now = datetime.now(UTC)
        hyperparameters = self.params.model_dump()
        total_steps = self.params.steps_per_epoch(self.training.n_examples) * self.params.epochs
        return FinetuneJob(
            id=job_id,
            provider=PROVIDER,
            status=status,
            key_env=key_env,
            endpoint=tinker_service_url(),
            base_model=self.base_model,
            suffix=self.suffix,
            method="supervised",
            hyperparameters_requested=hyperparameters,
            hyperparameters_actual=hyperparameters,
            seed_requested=self.seed,
            seed=self.seed,
            created_at=now,
            refreshed_at=now,
            api_metadata={
                MARKER: "1",
                MD5: self.training.md5,
                FILE_NAME: self.training.path.name,
                BASE: self.base_model,
            },
            create_request={
                "file": str(self.training.path.resolve()),
                "md5": self.training.md5,
                "n_examples": self.training.n_examples,
            },
            progress={"step": 0, "total_steps": total_steps},
        )


Selection = Callable[[Database, list[TinkerRequest]], list[TinkerRequest]]


_NAME = re.compile(r"[A-Za-z0-9._-]+")


def check_tinker_suffix(suffix: str) -> None:
    """Raise unless `suffix` can name Tinker checkpoints (``<suffix>-step-<n>``)."""
    check_suffix(suffix)
    if not _NAME.fullmatch(suffix):
        raise SuffixConflict(
            f"Suffix {suffix!r} cannot name Tinker checkpoints: use letters, digits, '.', "
            "'_' and '-' only.",
            hint="Pass another --suffix.",
        )


def submit_tinker(
    settings: Settings,
    requests: Sequence[TinkerRequest],
    *,
    key_env: str | None = None,
    dry_run: bool = False,
    select: Selection | None = None,
) -> list[FinetuneJob]:
    """Record and start `requests` (each suffix checked against its content under the lab's
    create lock); with `dry_run` the jobs that would be made (status ``dry-run``)."""
    require_tinker()
    env = key_env_name(key_env)
    tinker_key(env)
    with lab_database(settings) as db, create_lock(settings):
        for request in {(r.suffix, r.training.md5): r for r in requests}.values():
            refuse_other_content(db, request.suffix, request.training.md5, request.training.path)
        chosen = select(db, list(requests)) if select else list(requests)
        if dry_run:
            return [r.job(f"dry-run-{i + 1}", "dry-run", env) for i, r in enumerate(chosen)]
        jobs = []
        for request in chosen:
            job_id = f"tinker-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
            job = request.job(job_id, "queued", env)
            upsert_job(db, job, tags=request.tags)
            jobs.append(job)
        launch_workers(db, settings, jobs)
        return [get_job(db, job.id) or job for job in jobs]


def create_tinker(
    file: str | Path,
    *,
    base_model: str,
    suffix: str | None = None,
    seed: int | None = None,
    seeds: int = 1,
    epochs: int | None = None,
    batch_size: int | None = None,
    learning_rate: float | None = None,
    lora_rank: int | None = None,
    lr_schedule: LrSchedule | None = None,
    save_every: int | None = None,
    train_on: TrainOn | None = None,
    key_env: str | None = None,
    tags: Any = None,
    dry_run: bool = False,
    settings: Settings | None = None,
) -> list[FinetuneJob]:
    """Start supervised LoRA fine-tune(s) of `base_model` on Tinker, one detached worker per
    seed (``seed``, ``seed+1``, … or random); returns the ``queued`` jobs. Every check raises
    before anything starts: the file (`InvalidTrainingFile`), the settings (None: the default),
    the suffix, tags, key (``TINKER_API_KEY[_<NAME>]`` with ``key_env=NAME``), `tinker` extra."""
    settings = settings or load_settings()
    params = tinker_params(
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        lora_rank=lora_rank,
        lr_schedule=lr_schedule,
        save_every=save_every,
        train_on=train_on,
    )
    if not base_model.strip():
        raise LabmgrError("--base is empty.", hint="Name a Tinker base model, e.g. Qwen/Qwen3-8B.")
    draw = random.SystemRandom().randrange
    chosen = replicas(seed, seeds, tags)
    path = Path(file)
    training = load_training_file(path)
    suffix = suffix if suffix is not None else default_suffix(path)
    check_tinker_suffix(suffix)
    base = base_model.strip()
    requests = [
        TinkerRequest(training, base, suffix, params, draw(2**31) if one is None else one, tagged)
        for one, tagged in chosen
    ]
    return submit_tinker(settings, requests, key_env=key_env, dry_run=dry_run)
