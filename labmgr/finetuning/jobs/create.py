"""`create`: check every option and file before anything is uploaded, then one job per seed."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from jobs_db import FinetuneJob, parse_tags
from jobs_db.errors import DatabaseInputError
from labmgr.errors import LabmgrError
from labmgr.finetuning.jobs.graders import grader_item_fields, load_grader
from labmgr.finetuning.jobs.request import (
    JobRequest,
    TrainingData,
    check_suffix,
    default_suffix,
    wandb_integration,
)
from labmgr.finetuning.jobs.submit import file_md5, submit_requests
from labmgr.finetuning.methods import (
    Hyperparameter,
    Method,
    base_model_spec,
    check_hyperparameters,
    check_method_for_base,
    method_object,
)
from labmgr.finetuning.training_data.validation import validate_training_file
from labmgr.pricing import Price
from labmgr.settings import Settings, load_settings


def replicas(seed: int | None, seeds: int, tags: Any) -> list[tuple[int | None, dict[str, str]]]:
    """(seed, tags) of each of `seeds` replicas: seeds ``seed``, ``seed+1``, … (random without
    `seed`; `seed` itself for one job), tags with ``replica=N`` when there are several."""
    if seeds < 1:
        raise LabmgrError(f"--seeds must be at least 1, not {seeds}.")
    try:
        tag_map = parse_tags(tags)
    except DatabaseInputError as exc:
        raise LabmgrError(f"Bad --tag: {exc}.", hint="Write tags as key=value.") from None
    if seeds == 1:
        return [(seed, tag_map)]
    if seed is not None:
        chosen: list[int] = [seed + i for i in range(seeds)]
    else:
        chosen = random.SystemRandom().sample(range(2**31 - 1), seeds)
    return [(value, {**tag_map, "replica": str(i + 1)}) for i, value in enumerate(chosen)]


Blame = Callable[[str], AbstractContextManager[object]]
"""Reraises a `LabmgrError` from inside as one naming an input key (a sweep spec's);
`nullcontext` leaves it as it is."""


def checked_grader(
    method: str,
    bases: Sequence[str],
    grader: str | Path | Mapping[str, Any] | None,
    blame: Blame = nullcontext,
) -> dict[str, Any] | None:
    """Raise unless every base takes `method`; the grader, loaded (one iff reinforcement)."""
    with blame("base"):
        for base in bases:
            check_method_for_base(method, base_model_spec(base), base)
    with blame("grader" if grader is not None else "method"):
        grader_object = load_grader(grader) if grader is not None else None
        method_object(method, {}, grader_object)
    return grader_object


def load_training_file(
    path: Path, method: str = "supervised", base: str | None = None, **checks: Any
) -> TrainingData:
    """Validate a training (or validation) file; raises `InvalidTrainingFile` with lines."""
    report = validate_training_file(path, method, base, **checks)  # type: ignore[arg-type]
    report.raise_for_errors()
    return TrainingData(
        path=path, md5=file_md5(path), n_examples=report.n_examples, n_tokens=report.n_tokens
    )


def load_training_data(
    method: str,
    bases: Sequence[str],
    path: Path,
    validation: Path | None,
    *,
    fields: Sequence[str],
    prices: Mapping[str, Price],
    blame: Blame = nullcontext,
    key: str = "file",
) -> tuple[TrainingData, TrainingData | None]:
    """The training file checked for every base (priced for the first), and the validation
    file; errors of the training file are blamed on `key`, of the validation file on
    ``validation``."""
    with blame(key):
        training = load_training_file(path, method, bases[0], item_fields=fields, prices=prices)
        for base in bases[1:]:
            load_training_file(path, method, base, item_fields=fields)
    if validation is None:
        return training, None
    with blame("validation"):
        return training, load_training_file(
            validation, method, bases[0], item_fields=fields, min_examples=1
        )


def create(
    file: str | Path,
    *,
    base_model: str,
    suffix: str | None = None,
    epochs: Hyperparameter = "auto",
    batch_size: Hyperparameter = "auto",
    lr_multiplier: Hyperparameter = "auto",
    seed: int | None = None,
    seeds: int = 1,
    validation_file: str | Path | None = None,
    method: Method = "supervised",
    beta: Hyperparameter | None = None,
    grader: str | Path | Mapping[str, Any] | None = None,
    reasoning_effort: str | None = None,
    compute_multiplier: Hyperparameter | None = None,
    eval_interval: Hyperparameter | None = None,
    eval_samples: Hyperparameter | None = None,
    wandb_project: str | None = None,
    wandb_entity: str | None = None,
    wandb_name: str | None = None,
    wandb_tags: Sequence[str] | None = None,
    key_env: str | None = None,
    tags: Any = None,
    dry_run: bool = False,
    settings: Settings | None = None,
) -> list[FinetuneJob]:
    """Create fine-tuning job(s) and record them; returns one job per seed, or raises.

    ``method`` is ``supervised``, ``dpo`` (``beta``) or ``reinforcement`` (a reasoning base,
    a ``grader`` and its hyperparameters). Every check raises before anything is uploaded
    (`InvalidTrainingFile` with line numbers, `UnsupportedOption`, `SuffixConflict`, …). The
    ``seeds`` replicas share the suffix and get seeds ``seed``, ``seed+1``, … (or random).
    Jobs past the daily limit come back queued locally; ``dry_run``: status ``dry-run``.
    """
    settings = settings or load_settings()
    path = Path(file)
    grader_object = checked_grader(method, [base_model], grader)
    hyperparameters = check_hyperparameters(
        method,
        {
            "n_epochs": epochs,
            "batch_size": batch_size,
            "learning_rate_multiplier": lr_multiplier,
            "beta": beta,
            "reasoning_effort": reasoning_effort,
            "compute_multiplier": compute_multiplier,
            "eval_interval": eval_interval,
            "eval_samples": eval_samples,
        },
    )
    integrations = wandb_integration(
        wandb_project, entity=wandb_entity, name=wandb_name, tags=wandb_tags
    )
    replica_list = replicas(seed, seeds, tags)
    training, validation = load_training_data(
        method,
        [base_model],
        path,
        Path(validation_file) if validation_file is not None else None,
        fields=grader_item_fields(grader_object) if grader_object else [],
        prices=settings.prices,
    )
    suffix = suffix if suffix is not None else default_suffix(path)
    check_suffix(suffix)
    requests = [
        JobRequest(
            training=training,
            validation=validation,
            base_model=base_model,
            suffix=suffix,
            method=method,
            hyperparameters=hyperparameters,
            grader=grader_object,
            integrations=integrations,
            seed=one_seed,
            tags=replica_tags,
        )
        for one_seed, replica_tags in replica_list
    ]
    return submit_requests(settings, requests, key_env=key_env, dry_run=dry_run)
