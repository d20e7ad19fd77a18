"""Sending planned jobs: each file uploaded once per organization/project, one ``jobs.create``
per job, each recorded; from the daily limit on the rest are queued locally."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai
from filelock import FileLock
from openai import OpenAI

from jobs_db import (
    QUEUED_LOCALLY,
    Database,
    FinetuneJob,
    TrainingFile,
    find_file,
    get_job,
    upsert_file,
    upsert_job,
)
from labmgr.accounts import Accounts, Credential
from labmgr.errors import DailyJobLimit, FineTuningApiError, JobRefused, LabmgrError, api_message
from labmgr.finetuning.jobs.daily_limit import daily_limit_error, is_daily_limit, slot_time
from labmgr.finetuning.jobs.request import REQUEST, JobRequest, TrainingData, refuse_other_content
from labmgr.finetuning.registry.database import lab_database, require_writable
from labmgr.finetuning.registry.records import job_record
from labmgr.settings import Settings

QUEUE_PHASE = "waiting for a daily job slot"
SENT_PHASE = "sent once without an answer; looked up by request id before it is sent again"
Selection = Callable[[Database, list[JobRequest]], list[JobRequest]]
"""Chooses, under the create lock, which planned jobs to create (a sweep skips the ones it
has)."""


def submit_requests(
    settings: Settings,
    requests: Sequence[JobRequest],
    *,
    key_env: str | None = None,
    dry_run: bool = False,
    select: Selection | None = None,
) -> list[FinetuneJob]:
    """Upload and create `requests` with one key, each suffix checked against the content it
    was used for under the lab's create lock; returns the jobs (queued ones included), or
    with `dry_run` the jobs that would be made (status ``dry-run``, not recorded)."""
    for request in requests:
        request.metadata()  # the tags must fit the API's metadata before anything is spent
    with closing(Accounts(settings)) as accounts, lab_database(settings) as db:
        if not dry_run:
            require_writable(settings, db)  # a job bought must be recorded
        credential = accounts.credential(key_env) if key_env else accounts.default()
        credential = accounts.resolve(credential)
        with create_lock(settings):
            used = dict.fromkeys((r.suffix, r.training.md5, r.training.path) for r in requests)
            for suffix, md5, path in used:  # each suffix and content once, in order
                refuse_other_content(db, suffix, md5, path)
            chosen = select(db, list(requests)) if select else list(requests)
            if dry_run:
                return [request.dry_run_job(credential, i) for i, request in enumerate(chosen)]
            if not chosen:
                return []
            client = accounts.pool.client(credential)
            files = _upload_all(db, client, credential, chosen)
            return _launch(db, client, credential, chosen, files)


def _upload_all(
    db: Database, client: OpenAI, credential: Credential, requests: Sequence[JobRequest]
) -> dict[str, str]:
    """``{md5: file id}`` of each distinct training and validation file."""
    files: dict[str, str] = {}
    for request in requests:
        for data in (request.training, request.validation):
            if data is not None and data.md5 not in files:
                files[data.md5] = _upload(db, client, credential, data, data is request.training)
    return files


def file_md5(path: Path) -> str:
    """Hex md5 of the file's bytes (read in chunks)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "md5").hexdigest()


def _upload(
    db: Database, client: OpenAI, credential: Credential, data: TrainingData, training: bool
) -> str:
    """The id of the file with this content in the key's organization/project: one recorded
    earlier if ``files.retrieve`` still finds it, else a new upload."""
    path, md5 = data.path, data.md5
    known = find_file(
        db, md5, credential.organization, credential.project, endpoint=credential.base_url
    )
    if known is not None:
        try:
            if client.files.retrieve(known.id).status != "error":
                return known.id
        except openai.NotFoundError:
            pass
    try:
        remote = client.files.create(file=(path.name, path.read_bytes()), purpose="fine-tune")
    except openai.APIStatusError as exc:
        raise FineTuningApiError(
            f"Uploading {path} with {credential.key_env} failed: HTTP {exc.status_code}: "
            f"{api_message(exc)}",
            hint="Check the file with `labmgr finetune validate` and the key with `labmgr keys`.",
        ) from None
    except openai.APIConnectionError:
        raise FineTuningApiError(
            f"Uploading {path} failed: could not reach {credential.base_url}.",
            hint="Check the network and the endpoint's base URL, then try again.",
        ) from None
    record = TrainingFile(
        id=remote.id,
        organization_id=credential.organization,
        project_id=credential.project,
        key_env=credential.key_env,
        endpoint=credential.base_url,
        local_path=str(path.resolve()),
        filename=path.name,
        md5=md5,
        size_bytes=remote.bytes,
        num_examples=data.n_examples if training else None,
        purpose="fine-tune",
        created_at=datetime.fromtimestamp(remote.created_at, UTC),
        uploaded_at=datetime.now(UTC),
    )
    upsert_file(db, record)
    return record.id


@contextmanager
def create_lock(settings: Settings) -> Iterator[None]:
    """The lab's lock that keeps two `create` calls from racing on one suffix."""
    path = settings.home / "create.lock"
    lock = FileLock(path)
    try:
        lock.acquire()
    except OSError as exc:
        raise LabmgrError(
            f"Cannot create the lock file {path}: {exc.strerror or exc}.",
            hint=f"Check that the lab folder {settings.home} is writable; nothing was uploaded.",
        ) from None
    try:
        yield
    finally:
        lock.release()


def _launch(
    db: Database,
    client: OpenAI,
    credential: Credential,
    requests: Sequence[JobRequest],
    files: Mapping[str, str],
) -> list[FinetuneJob]:
    """Create and record each job in order; from the daily limit on, queue the rest."""
    done: list[FinetuneJob] = []
    bodies = [request.body(files) for request in requests]
    for index, (request, body) in enumerate(zip(requests, bodies, strict=True)):
        try:
            job = create_once(db, client, credential, body, done)
        except DailyJobLimit as limit:
            now = datetime.now(UTC)
            not_before = slot_time(limit, now)
            for later, later_body in zip(requests[index:], bodies[index:], strict=True):
                done.append(_queue(db, credential, later, later_body, not_before, now))
            break
        record = job_record(
            job,
            refreshed_at=datetime.now(UTC),
            api_metadata=body["metadata"],
            create_request=body,
            **request.recorded(credential),
        )
        upsert_job(db, record, tags=request.tags)
        done.append(record)
    return [get_job(db, job.id) or job for job in done]


def _queue(
    db: Database,
    credential: Credential,
    request: JobRequest,
    body: dict[str, Any],
    not_before: datetime,
    now: datetime,
) -> FinetuneJob:
    """Record `request` as a job queued locally until `not_before` (refused at `now`)."""
    record = FinetuneJob(
        id=f"queued-{request.request_id[:20]}",
        status=QUEUED_LOCALLY,
        phase=QUEUE_PHASE,
        created_at=now,
        refreshed_at=now,
        not_before=not_before,
        training_file_id=body["training_file"],
        validation_file_id=body.get("validation_file"),
        api_metadata=body["metadata"],
        create_request=body,
        integrations=body.get("integrations"),
        **request.recorded(credential),
    )
    upsert_job(db, record, tags=request.tags)
    return record


def find_by_request(client: OpenAI, request_id: str) -> Any | None:
    """The job created with labmgr request id `request_id`, if the API holds one; raises
    ``openai.APIError`` when the API cannot be asked (which says nothing either way)."""
    found = list(client.fine_tuning.jobs.list(metadata={REQUEST: request_id}, limit=5))
    return found[0] if found else None


def create_once(
    db: Database,
    client: OpenAI,
    credential: Credential,
    body: dict[str, Any],
    created: list[FinetuneJob],
) -> Any:
    """One ``jobs.create`` without blind retries (a lost response is looked up by request
    id); raises `DailyJobLimit`, `JobRefused` (a 4xx), or `FineTuningApiError`."""
    try:
        return client.with_options(max_retries=0).fine_tuning.jobs.create(**body)
    except openai.APIStatusError as exc:
        if is_daily_limit(exc):
            raise daily_limit_error(exc, client, db, credential, created) from None
        if exc.status_code < 500:
            raise JobRefused(
                f"The API refused the job for suffix {body['suffix']!r}: HTTP "
                f"{exc.status_code}: {api_message(exc)}",
                hint="Fix the request (base model, hyperparameters, file) and run it again.",
            ) from None
        failure = f"HTTP {exc.status_code}"
    except openai.APIConnectionError:
        failure = "the connection failed"
    done = "".join(f" {job.id}" for job in created)
    before = f" Created before it:{done}" if done else ""
    try:
        found = find_by_request(client, body["metadata"][REQUEST])
    except openai.APIError:
        raise FineTuningApiError(
            f"Creating the job for suffix {body['suffix']!r} failed ({failure}), and the API "
            f"could not be asked whether it created the job anyway.{before}",
            hint="Run `labmgr jobs import --from-api` once the API answers: it records the job "
            "if it was created. Run the command again only if it was not.",
        ) from None
    if found is not None:
        return found
    raise FineTuningApiError(
        f"Creating the job for suffix {body['suffix']!r} failed ({failure}); the API holds no "
        f"job from this request.{before}",
        hint="Run the same command again (the uploaded file is reused).",
    )
