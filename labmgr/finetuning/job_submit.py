"""From planned jobs to recorded ones: the key, the suffix rule, one upload per file, launch.

`create` and `sweep` plan their jobs (`JobRequest`s, every check done) and hand them here.
Under the lab's create lock: each suffix is checked against the content it was used for,
`select` may drop jobs the database already holds (a sweep re-run), each distinct file is
uploaded once per organization/project, and the jobs are launched in order (queued
locally from the daily limit on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from filelock import FileLock
from openai import OpenAI

from jobs_db import Database, FinetuneJob
from labmgr.accounts import Accounts, Credential
from labmgr.finetuning.errors import LabFolderError
from labmgr.finetuning.job_launch import launch
from labmgr.finetuning.job_request import JobRequest, TrainingData
from labmgr.finetuning.lab_db import lab_database
from labmgr.finetuning.suffixes import refuse_other_content
from labmgr.finetuning.upload import ensure_uploaded
from labmgr.settings import Settings

__all__ = ["Selection", "submit_requests"]

Selection = Callable[[Database, list[JobRequest]], list[JobRequest]]
"""Chooses, under the create lock, which planned jobs to create (a sweep skips the jobs it
already has)."""


def submit_requests(
    settings: Settings,
    requests: Sequence[JobRequest],
    *,
    key_env: str | None = None,
    dry_run: bool = False,
    select: Selection | None = None,
) -> list[FinetuneJob]:
    """Upload and launch `requests` with one key; returns the jobs (queued ones included).

    With `dry_run` nothing is uploaded or created: the jobs that would be made are returned
    with status ``dry-run`` and are not recorded.
    """
    for request in requests:
        request.metadata()  # the tags must fit the API's metadata before anything is spent
    with lab_database(settings) as db, _accounts(settings) as accounts:
        credential = accounts.credential(key_env) if key_env else accounts.default()
        credential = accounts.resolve(credential)
        with create_lock(settings):
            for request in _one_per_suffix_and_content(requests):
                refuse_other_content(
                    db, request.suffix, request.training.md5, request.training.path
                )
            chosen = select(db, list(requests)) if select else list(requests)
            if dry_run:
                return [request.dry_run_job(credential, i) for i, request in enumerate(chosen)]
            if not chosen:
                return []
            client = accounts.pool.client(credential)
            files = _upload_all(db, client, credential, chosen)
            return launch(db, client, credential, chosen, files)


def _one_per_suffix_and_content(requests: Sequence[JobRequest]) -> list[JobRequest]:
    seen: dict[tuple[str, str], JobRequest] = {}
    for request in requests:
        seen.setdefault((request.suffix, request.training.md5), request)
    return list(seen.values())


def _upload_all(
    db: Database, client: OpenAI, credential: Credential, requests: Sequence[JobRequest]
) -> dict[str, str]:
    """Each distinct training and validation file uploaded once: ``{md5: file id}``."""
    files: dict[str, str] = {}
    datasets: list[tuple[TrainingData, bool]] = []
    for request in requests:
        datasets.append((request.training, True))
        if request.validation is not None:
            datasets.append((request.validation, False))
    for data, is_training in datasets:
        if data.md5 in files:
            continue
        uploaded, _ = ensure_uploaded(
            db,
            client,
            credential,
            data.path,
            md5=data.md5,
            num_examples=data.n_examples if is_training else None,
        )
        files[data.md5] = uploaded.id
    return files


@contextmanager
def create_lock(settings: Settings) -> Iterator[None]:
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
