"""`create`: validate, upload once, launch one job per seed, record each; or raise."""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import openai
from filelock import FileLock
from openai import OpenAI

from jobs_db import Database, FinetuneJob, parse_tags, upsert_job
from jobs_db.errors import DatabaseInputError
from labmgr.accounts import Accounts, Credential
from labmgr.errors import LabmgrError
from labmgr.finetuning.api_errors import api_message
from labmgr.finetuning.base_models import base_model_spec
from labmgr.finetuning.daily_limit import daily_limit_error, is_daily_limit
from labmgr.finetuning.errors import FineTuningApiError, LabFolderError
from labmgr.finetuning.job_metadata import REQUEST, build_metadata
from labmgr.finetuning.job_snapshot import job_record
from labmgr.finetuning.lab_db import lab_database
from labmgr.finetuning.suffixes import check_suffix, default_suffix, refuse_other_content
from labmgr.finetuning.upload import ensure_uploaded, file_md5
from labmgr.finetuning.validation import validate_training_file
from labmgr.settings import Settings, load_settings

__all__ = ["Hyperparameter", "create"]

Hyperparameter = int | float | Literal["auto"]
DRY_RUN_STATUS = "dry-run"


def _seeds(seed: int | None, seeds: int) -> list[int | None]:
    if seeds < 1:
        raise LabmgrError(f"--seeds must be at least 1, not {seeds}.")
    if seeds == 1:
        return [seed]
    if seed is not None:
        return [seed + i for i in range(seeds)]
    return random.SystemRandom().sample(range(2**31 - 1), seeds)


def _hyperparameters(
    epochs: Hyperparameter, batch_size: Hyperparameter, lr_multiplier: Hyperparameter
) -> dict[str, Any]:
    values = {
        "n_epochs": epochs,
        "batch_size": batch_size,
        "learning_rate_multiplier": lr_multiplier,
    }
    for name, value in values.items():
        if value == "auto":
            continue
        whole = name != "learning_rate_multiplier"
        kind = "a whole number" if whole else "a number"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise LabmgrError(f"Hyperparameter {name} must be 'auto' or {kind}, not {value!r}.")
        if not math.isfinite(value) or value <= 0 or (whole and value != int(value)):
            raise LabmgrError(
                f"Hyperparameter {name} must be 'auto' or {kind} above 0, not {value}.",
                hint="Leave it at auto to let the API choose.",
            )
        if whole:
            values[name] = int(value)
    return values


def _tags(tags: Any) -> dict[str, str]:
    try:
        return parse_tags(tags)
    except DatabaseInputError as exc:
        raise LabmgrError(f"Bad --tag: {exc}.", hint="Write tags as key=value.") from None


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
    method: Literal["supervised", "dpo"] = "supervised",
    key_env: str | None = None,
    tags: Any = None,
    dry_run: bool = False,
    settings: Settings | None = None,
) -> list[FinetuneJob]:
    """Create fine-tuning job(s) and record them; returns one job per seed, or raises.

    Validates the file(s) (`InvalidTrainingFile` with line numbers), checks the base model
    (`UnknownBaseModel`) and the suffix (`SuffixConflict` when it was used for other
    content), uploads each file once per organization/project, then creates ``seeds``
    replicas with the same suffix and distinct seeds (``seed``, ``seed+1``, … or random
    distinct seeds), each tagged in the API's metadata so ``import_from_api`` can rebuild
    it. A daily job limit raises `DailyJobLimit` (with ``frees_at`` and the jobs created
    before it). With ``dry_run`` nothing is uploaded or created: the jobs that would be
    created are returned with status ``"dry-run"`` and are not recorded.
    """
    settings = settings or load_settings()
    path = Path(file)
    base_model_spec(base_model)
    hyper = _hyperparameters(epochs, batch_size, lr_multiplier)
    seed_list = _seeds(seed, seeds)
    tag_map = _tags(tags)
    report = validate_training_file(path, method, base_model, prices=settings.prices)
    report.raise_for_errors()
    validation_path = Path(validation_file) if validation_file is not None else None
    if validation_path is not None:
        validate_training_file(
            validation_path, method, base_model, min_examples=1
        ).raise_for_errors()
    suffix = suffix if suffix is not None else default_suffix(path)
    check_suffix(suffix)
    md5 = file_md5(path)
    validation_md5 = file_md5(validation_path) if validation_path else None

    with lab_database(settings) as db, _accounts(settings) as accounts:
        credential = accounts.credential(key_env) if key_env else accounts.default()
        credential = accounts.resolve(credential)
        with _create_lock(settings):
            refuse_other_content(db, suffix, md5, path)
            plan = _Plan(
                path, validation_path, base_model, suffix, method, hyper, md5, validation_md5
            )
            if dry_run:
                return [_dry_run_job(plan, credential, s, i) for i, s in enumerate(seed_list)]
            client = accounts.pool.client(credential)
            training, _ = ensure_uploaded(
                db, client, credential, path, md5=md5, num_examples=report.n_examples
            )
            validation_id = None
            if validation_path is not None and validation_md5 is not None:
                validation_id = ensure_uploaded(
                    db, client, credential, validation_path, md5=validation_md5
                )[0].id
            return _launch(
                db, client, credential, plan, training.id, validation_id, seed_list, tag_map
            )


@contextmanager
def _create_lock(settings: Settings) -> Iterator[None]:
    """The lab's lock that keeps two `create` calls from racing on one suffix."""
    path = settings.home / "create.lock"
    lock = FileLock(path)
    try:
        lock.acquire()
    except OSError as exc:
        raise LabFolderError(
            f"Cannot create the lock file {path}: {exc.strerror or exc}.",
            hint=f"Check that the lab folder {settings.home} is writable; nothing was uploaded.",
        ) from None
    try:
        yield
    finally:
        lock.release()


@contextmanager
def _accounts(settings: Settings) -> Iterator[Accounts]:
    accounts = Accounts(settings)
    try:
        yield accounts
    finally:
        accounts.close()


class _Plan:
    def __init__(
        self,
        path: Path,
        validation_path: Path | None,
        base_model: str,
        suffix: str,
        method: str,
        hyper: dict[str, Any],
        md5: str,
        validation_md5: str | None,
    ) -> None:
        self.path, self.validation_path = path, validation_path
        self.base_model, self.suffix, self.method, self.hyper = base_model, suffix, method, hyper
        self.md5, self.validation_md5 = md5, validation_md5


def _requested(plan: _Plan, credential: Credential, seed: int | None) -> dict[str, Any]:
    """What labmgr asked for and with which key: the job fields the API does not return."""
    return {
        "key_env": credential.key_env,
        "endpoint": credential.base_url,
        "project_id": credential.project,
        "base_model": plan.base_model,
        "suffix": plan.suffix,
        "method": plan.method,
        "hyperparameters_requested": plan.hyper,
        "seed_requested": seed,
    }


def _dry_run_job(plan: _Plan, credential: Credential, seed: int | None, index: int) -> FinetuneJob:
    return FinetuneJob(
        id=f"dry-run-{index + 1}", status=DRY_RUN_STATUS, **_requested(plan, credential, seed)
    )


def _launch(
    db: Database,
    client: OpenAI,
    credential: Credential,
    plan: _Plan,
    training_id: str,
    validation_id: str | None,
    seed_list: Sequence[int | None],
    tags: dict[str, str],
) -> list[FinetuneJob]:
    created: list[FinetuneJob] = []
    for index, seed in enumerate(seed_list):
        job_tags = dict(tags)
        if len(seed_list) > 1:
            job_tags["replica"] = str(index + 1)
        metadata = build_metadata(
            md5=plan.md5,
            file_name=plan.path.name,
            base_model=plan.base_model,
            request_id=uuid.uuid4().hex,
            tags=job_tags,
            validation_md5=plan.validation_md5,
        )
        body: dict[str, Any] = {
            "model": plan.base_model,
            "training_file": training_id,
            "suffix": plan.suffix,
            "method": {"type": plan.method, plan.method: {"hyperparameters": plan.hyper}},
            "metadata": metadata,
        }
        if validation_id:
            body["validation_file"] = validation_id
        if seed is not None:
            body["seed"] = seed
        job = _create_once(db, client, credential, body, created)
        record = job_record(
            job,
            refreshed_at=datetime.now(UTC),
            api_metadata=metadata,
            **_requested(plan, credential, seed),
        )
        upsert_job(db, record, tags=job_tags)
        created.append(record)
    return created


def _create_once(
    db: Database,
    client: OpenAI,
    credential: Credential,
    body: dict[str, Any],
    created: list[FinetuneJob],
) -> Any:
    """One ``jobs.create`` without blind retries: a lost response is looked up by request id."""
    try:
        return client.with_options(max_retries=0).fine_tuning.jobs.create(**body)
    except openai.APIStatusError as exc:
        if is_daily_limit(exc):
            raise daily_limit_error(exc, client, db, credential, created) from None
        if exc.status_code < 500:
            raise FineTuningApiError(
                f"The API refused the job for suffix {body['suffix']!r}: HTTP "
                f"{exc.status_code}: {api_message(exc)}",
                hint="Fix the request (base model, hyperparameters, file) and run it again.",
            ) from None
        failure = f"HTTP {exc.status_code}"
    except openai.APIConnectionError:
        failure = "the connection failed"
    request_id = body["metadata"][REQUEST]
    try:
        found = list(client.fine_tuning.jobs.list(metadata={REQUEST: request_id}, limit=5))
    except openai.APIError:
        found = []
    if found:
        return found[0]
    done = "".join(f" {job.id}" for job in created)
    raise FineTuningApiError(
        f"Creating the job for suffix {body['suffix']!r} failed ({failure}); the API holds no "
        f"job from this request.{' Created before it:' + done if done else ''}",
        hint="Run the same command again (the uploaded file is reused).",
    )
