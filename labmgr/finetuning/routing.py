"""Which key to use for a job: the one that created it, else any key of its project."""

from __future__ import annotations

from collections.abc import Sequence

from jobs_db import FinetuneJob
from labmgr.accounts import OPENAI_ENDPOINT, Accounts, Credential
from labmgr.errors import LabmgrError

__all__ = ["candidate_credentials", "resolved_credentials"]


def resolved_credentials(accounts: Accounts) -> tuple[list[Credential], dict[str, str]]:
    """Every key with its organization/project (cached lookups), and why others failed."""
    found: list[Credential] = []
    failed: dict[str, str] = {}
    for credential in accounts.credentials:
        try:
            found.append(accounts.resolve(credential))
        except LabmgrError as exc:
            failed[credential.key_env] = exc.message
    return found, failed


def candidate_credentials(job: FinetuneJob, credentials: Sequence[Credential]) -> list[Credential]:
    """Keys that may see `job`, best first.

    The key that created the job comes first, then other keys of its project. A key of
    another project is left out when both projects are known (the API scopes jobs to a
    project); when the job's project is unknown (e.g. imported from llmcomp) every key of
    its endpoint is a candidate, tried in order.
    """

    def same_endpoint(credential: Credential) -> bool:
        if job.endpoint:
            return credential.base_url == job.endpoint
        return credential.endpoint == OPENAI_ENDPOINT

    def may_see(credential: Credential) -> bool:
        if job.project_id and credential.project and credential.project != job.project_id:
            return False
        return same_endpoint(credential)

    usable = [c for c in credentials if may_see(c)]
    return sorted(
        usable,
        key=lambda c: (
            c.key_env != job.key_env,
            not (job.project_id and c.project == job.project_id),
        ),
    )
